/**
 * The agent's public work status (NIP-AW, kind 30181, docs/protocol.md §4): channel members see
 * what the agent is doing — status, model, turn, at most 20 tool titles of at most 160
 * characters with paths under the state directory, secrets and credentials in URLs removed —
 * republished at most every 5 s, cleared when the turn ends, and never published in a channel
 * set to `work_status: off`.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { nip19, type EventTemplate } from "nostr-tools";
import { redactTitle } from "../src/turn/redact-title.js";
import { WorkStatusBoard } from "../src/turn/work-status.js";
import { World } from "../kit/world.js";
import { waitFor } from "../kit/wait.js";
import { KIND } from "../src/nostr/kinds.js";

const cleanup: (() => unknown)[] = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

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

test("the board: working at once, tool changes at most every 5 s, at most 20 entries, cleared when the channel's last turn ends", async () => {
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
  now += 5000;
  await waitFor(() => out.length >= 2, { timeoutMs: 10_000, what: "the snapshot the board's 5 s timer publishes" });
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

test("a channel's members see the agent working with its tool titles, and the status cleared when the turn ends; work_status: off publishes none", async () => {
  const w = await World.create();
  cleanup.push(() => w.close());
  const quiet = await w.addChannel({ name: "quiet" });
  const d = await w.startDaemon({ channels: [{ id: "*" }, { id: quiet, work_status: "off" }], http: { listen: "127.0.0.1:0" } });
  // The status page links each channel's status (and shows the relay's NIP-11 key); not the quiet room's.
  const page = await (await fetch(`${String((await d.waitLog((l) => l.evt === "daemon.started")).http)}/status`)).text();
  const links = [...page.matchAll(/href="nostr:(naddr1[0-9a-z]+)"/g)].map((m) => nip19.decode(m[1]!).data as nip19.AddressPointer);
  assert.deepEqual(
    links.map((a) => [a.kind, a.pubkey, a.identifier]),
    [[KIND.workStatus, w.agent.pk, w.channel]],
  );
  assert.ok(page.includes(w.relay.relayPubkey), "the relay's key (NIP-11 self) is on the page");
  const status = { kinds: [KIND.workStatus], authors: [w.agent.pk], "#d": [w.channel] };
  // A progress note through send_message, then 7 s of work: the 5 s snapshot shows the tool.
  const asked = await w.owner.post("@agent #progress #slow 7000 show your work");
  const working = await w.waitEvents(
    status,
    (evs) => evs.some((e) => JSON.parse(e.content).activity?.some((a: { title: string }) => a.title === "send_message")),
    30_000,
  );
  const live = JSON.parse(working[0]!.content);
  assert.equal(live.status, "working");
  assert.equal(live.v, 1);
  assert.deepEqual(working[0]!.tags, [
    ["h", w.channel],
    ["d", w.channel],
  ]);
  await w.waitReplies(asked, 2, 30_000);
  const cleared = await w.waitEvents(status, (evs) => evs.length === 1 && JSON.parse(evs[0]!.content).status === "complete", 20_000);
  assert.deepEqual(JSON.parse(cleared[0]!.content).activity, [], "cleared at turn end");

  // The quiet channel: a turn runs to its end and no status is ever published there. A later
  // turn in the first channel publishes and clears its own status first, so a quiet-room
  // status queued before it would be stored by then.
  const q = await w.owner.post("@agent #progress in the quiet room", { channel: quiet });
  await w.waitReplies(q, 2, 30_000);
  const later = await w.owner.post("@agent once more");
  await w.waitReplies(later, 1, 30_000);
  const before = JSON.parse(cleared[0]!.content).turnId;
  await w.waitEvents(
    status,
    (evs) => evs.length === 1 && JSON.parse(evs[0]!.content).turnId !== before && JSON.parse(evs[0]!.content).status === "complete",
    20_000,
  );
  assert.deepEqual(await w.query({ kinds: [KIND.workStatus], authors: [w.agent.pk], "#d": [quiet] }), [], "work_status: off");
});
