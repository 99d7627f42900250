/**
 * The work status's content (NIP-AW, kind 30181, docs/protocol.md §4), in-process: tool titles
 * with state-dir paths, secrets and credentials in URLs removed and cut at 160 characters; the
 * board publishing at once when a channel starts working, at most every 5 s after, at most 20
 * tool titles, and cleared when the channel's last turn ends. What channel members see of it
 * through a daemon and a relay: test/turn-work-status.test.ts.
 */
import { mock, test } from "node:test";
import assert from "node:assert/strict";
import type { EventTemplate } from "nostr-tools";
import { redactTitle } from "../../src/turn/redact-title.js";
import { WorkStatusBoard } from "../../src/turn/work-status.js";
import { KIND } from "../../src/nostr/kinds.js";

const STATE = "/var/lib/buzz-bridge";

test("tool titles lose state-dir paths, secrets and URL credentials, and are cut at 160 characters", () => {
  const r = (t: string) => redactTitle(t, { privateDirs: [STATE], secrets: ["hunter2-password"] });
  assert.equal(r(`Read ${STATE}/work/general-1f2e/src/index.ts`), "Read …/index.ts");
  assert.equal(r(`ls ${STATE}`), "ls …");
  assert.equal(r("Fetch https://alice:s3cret@git.example.com/repo.git"), "Fetch https://[redacted]@git.example.com/repo.git");
  assert.equal(r("curl -H 'Authorization: Bearer abcdefghijklmnop' x"), "curl -H 'Authorization: Bearer [redacted]' x");
  assert.equal(r("export ANTHROPIC_API_KEY=sk-ant-0123456789abcdefghij"), "export ANTHROPIC_API_KEY=[redacted]");
  assert.equal(r("GET https://api.example.com/v1?api_key=XYZ123&page=2"), "GET https://api.example.com/v1?api_key=[redacted]&page=2");
  assert.equal(r("psql postgres://bb:hunter2-password@db/bb"), "psql postgres://[redacted]@db/bb");
  assert.equal(r(`sign with ${"a1".repeat(32)}`), "sign with [redacted]");
  assert.equal(r("nsec1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq is mine"), "[redacted] is mine");
  assert.equal(r("push with ghp_abcdefghijklmnopqrstuvwxyz0123"), "push with [redacted]");
  assert.equal(r("line one\nline\ttwo\u0007"), "line one line two");
  const long = r(`Edit ${"x".repeat(400)}`);
  assert.equal([...long].length, 160);
  assert.ok(long.endsWith("…"));
});

test("the board: working at once, tool changes at most every 5 s, at most 20 entries, cleared when the channel's last turn ends", (t) => {
  // The board's own 5 s timer on node:test's mock clock, moved with the board's `now`.
  mock.timers.enable({ apis: ["setTimeout"] });
  t.after(() => mock.timers.reset());
  const out: { t: EventTemplate; at: number }[] = [];
  let now = 1_000_000;
  const board = new WorkStatusBoard({ publish: (t) => out.push({ t, at: now }), redact: { privateDirs: [STATE] }, now: () => now });
  const body = (i: number) => JSON.parse(out[i]!.t.content) as Record<string, any>;

  const a = board.begin("ch-1", { turnId: "7", model: "opus", titles: "full" });
  assert.equal(out.length, 1, "the channel starts working: published at once");
  assert.deepEqual(out[0]!.t.tags, [
    ["h", "ch-1"],
    ["d", "ch-1"],
  ]);
  assert.equal(out[0]!.t.kind, KIND.workStatus);
  assert.equal(body(0).status, "working");
  assert.equal(body(0).model, "opus");
  assert.equal(body(0).turnId, "7");

  for (let i = 0; i < 30; i++)
    a.update({ sessionUpdate: "tool_call", toolCallId: `c${i}`, title: `Read ${STATE}/work/f${i}.ts`, status: "in_progress" });
  a.update({ sessionUpdate: "agent_message_chunk" });
  assert.equal(out.length, 1, "no second snapshot within 5 s");
  now += 4999;
  mock.timers.tick(4999);
  assert.equal(out.length, 1, "not before 5 s");
  now += 1;
  mock.timers.tick(1);
  assert.equal(out.length, 2, "one snapshot after 5 s carries every change");
  const acts = body(1).activity as { title: string; kind: string; status: string }[];
  assert.equal(acts.length, 20, "at most 20 activity entries");
  assert.ok(
    acts.every((x) => !x.title.includes(STATE)),
    "no state-dir path",
  );
  assert.equal(acts.at(-1)!.kind, "message");
  assert.equal(acts.at(-1)!.title, "Writing a reply", "streamed text is never shown");

  const b = board.begin("ch-1", { turnId: "8", model: "opus", titles: "full" });
  a.end("complete");
  assert.equal(out.length, 2, "another turn still runs: no clear");
  b.end("error", "failed");
  assert.equal(out.length, 3, "the last turn's end clears at once");
  assert.equal(body(2).status, "error");
  assert.deepEqual(body(2).activity, []);
  assert.ok(out[2]!.t.created_at > out[1]!.t.created_at, "each snapshot is newer than the one before (the relay keeps the newest)");
});

test("each snapshot in full: NIP-AW's fields, each tool once in its newest state, the latest running turn heading it", (t) => {
  mock.timers.enable({ apis: ["setTimeout"] });
  t.after(() => mock.timers.reset());
  const start = Date.parse("2026-12-07T10:00:00.000Z");
  const at = (ms: number) => new Date(start + ms).toISOString();
  let now = start;
  const out: EventTemplate[] = [];
  const board = new WorkStatusBoard({ publish: (e) => out.push(e), redact: { privateDirs: [STATE] }, now: () => now });
  const body = (i: number) => JSON.parse(out[i]!.content) as Record<string, unknown>;
  const head = { v: 1, source: "buzz-bridge" };

  const a = board.begin("ch", { turnId: "1", model: "opus", titles: "full" });
  assert.deepEqual(body(0), {
    ...head,
    status: "working",
    model: "opus",
    turnId: "1",
    turnStartedAt: at(0),
    activity: [],
    updatedAt: at(0),
  });
  now += 1000;
  a.update({ sessionUpdate: "tool_call", toolCallId: "c1", title: "Read notes.md", status: "in_progress" });
  now += 1000;
  a.update({ sessionUpdate: "agent_message_chunk" });
  a.update({ sessionUpdate: "agent_message_chunk" });
  now += 1000;
  a.update({ sessionUpdate: "tool_call_update", toolCallId: "c1", status: "completed" }); // no title: it keeps its own
  a.update({ sessionUpdate: "tool_call_update", toolCallId: "c1", status: "completed" }); // nothing new
  a.update({ sessionUpdate: "tool_call", toolCallId: "c2", title: "Run tests" });
  a.update({ sessionUpdate: "tool_call", title: "no id" });
  a.update({ sessionUpdate: "plan" });
  now += 2000;
  mock.timers.tick(4000); // 5 s after the first snapshot
  assert.equal(out.length, 2);
  assert.deepEqual(body(1), {
    ...head,
    status: "working",
    model: "opus",
    turnId: "1",
    turnStartedAt: at(0),
    activity: [
      { at: at(2000), kind: "message", title: "Writing a reply", status: "complete" },
      { at: at(3000), kind: "tool", title: "Read notes.md", status: "complete" },
      { at: at(3000), kind: "tool", title: "Run tests", status: "running" },
    ],
    updatedAt: at(5000),
  });

  // A second turn in the channel heads the snapshot while it runs; when it ends, the first heads it again.
  const b = board.begin("ch", { turnId: "2", model: "sonnet" });
  now += 5000;
  mock.timers.tick(5000);
  assert.equal(out.length, 3);
  assert.deepEqual([body(2).model, body(2).turnId, body(2).turnStartedAt], ["sonnet", "2", at(5000)]);
  b.end("complete");
  b.end("error");
  now += 5000;
  mock.timers.tick(5000);
  assert.equal(out.length, 4);
  assert.deepEqual([body(3).status, body(3).model, body(3).turnId], ["working", "opus", "1"]);
  a.end("error", "refused");
  assert.deepEqual(body(4), {
    ...head,
    status: "error",
    model: "opus",
    turnId: "1",
    turnStartedAt: at(0),
    completedAt: at(15000),
    stopReason: "refused",
    activity: [],
    updatedAt: at(15000),
  });
  a.update({ sessionUpdate: "tool_call", toolCallId: "c3", title: "late" });
  a.end("complete");
  mock.timers.tick(10_000);
  assert.equal(out.length, 5, "nothing after the channel's last turn ended");

  // Another channel: its own snapshot; a turn ended without a stop reason carries none.
  const c = board.begin("other", { turnId: "3" });
  c.end("complete");
  assert.deepEqual(body(6), {
    ...head,
    status: "complete",
    turnId: "3",
    turnStartedAt: at(15000),
    completedAt: at(15000),
    activity: [],
    updatedAt: at(15000),
  });
  assert.deepEqual(out[6]!.tags, [
    ["h", "other"],
    ["d", "other"],
  ]);
  const stamps = out.filter((e) => e.tags[0]![1] === "ch").map((e) => e.created_at);
  for (let i = 1; i < stamps.length; i++) assert.ok(stamps[i]! > stamps[i - 1]!, "each snapshot of a channel newer than the one before");
  assert.equal(board.metrics.published, out.length);
});

test("only a change is published: an update with nothing new publishes nothing, one with news after a quiet 5 s publishes at once", (t) => {
  mock.timers.enable({ apis: ["setTimeout"] });
  t.after(() => mock.timers.reset());
  let now = Date.parse("2026-12-07T10:00:00.000Z");
  const out: EventTemplate[] = [];
  const board = new WorkStatusBoard({ publish: (e) => out.push(e), redact: { privateDirs: [STATE] }, now: () => now });
  const activity = () => JSON.parse(out.at(-1)!.content).activity as { title: string; kind: string; status: string }[];
  const a = board.begin("ch", { turnId: "1", titles: "full" });
  assert.equal(out.length, 1);
  assert.ok(out[0]!.created_at >= Math.floor(Date.now() / 1000) - 1, "created_at is the time of publishing");
  now += 5000; // exactly 5 s: a change goes out at once
  const nothingNew = [
    { sessionUpdate: "tool_call", title: "no id" },
    { sessionUpdate: "tool_call", toolCallId: "c0" }, // no title
    { sessionUpdate: "plan" },
  ];
  for (const u of nothingNew) a.update(u);
  mock.timers.tick(10_000);
  assert.equal(out.length, 1, "nothing new: nothing published");
  a.update({ sessionUpdate: "tool_call", toolCallId: "c1", title: "Build", status: "in_progress" });
  assert.equal(out.length, 2, "news after a quiet 5 s: at once");
  now += 6000;
  a.update({ sessionUpdate: "tool_call_update", toolCallId: "c1", title: "Build", status: "in_progress" });
  mock.timers.tick(10_000);
  assert.equal(out.length, 2, "the same tool in the same state: nothing published");
  a.update({ sessionUpdate: "tool_call_update", toolCallId: "c1", title: "Build release", status: "in_progress" });
  assert.deepEqual(
    activity().map((x) => x.title),
    ["Build release"],
    "a new title for the same tool: published",
  );
  now += 6000;
  a.update({ sessionUpdate: "agent_message_chunk" });
  assert.equal(out.length, 4, "the model starts writing: published");
  now += 6000;
  a.update({ sessionUpdate: "agent_message_chunk" });
  mock.timers.tick(10_000);
  assert.equal(out.length, 4, "still writing: nothing new");
  a.update({ sessionUpdate: "tool_call_update", toolCallId: "c1", status: "failed" });
  assert.deepEqual(
    activity().map((x) => [x.title, x.status]),
    [
      ["Writing a reply", "complete"],
      ["Build release", "complete"],
    ],
    "a failed tool is done too",
  );
  a.end("complete");

  // 25 tools and no text: the newest 20.
  const b = board.begin("ch", { turnId: "2", titles: "full" });
  for (let i = 0; i < 25; i++) b.update({ sessionUpdate: "tool_call", toolCallId: `t${i}`, title: `step ${i}` });
  now += 5000;
  mock.timers.tick(5000);
  assert.deepEqual(
    activity().map((x) => x.title),
    Array.from({ length: 20 }, (_, i) => `step ${i + 5}`),
  );
  b.end("complete");
});
