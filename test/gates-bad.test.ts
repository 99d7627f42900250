/**
 * Gates that misbehave never trap a turn: a gate that never answers
 * its `_Stop` counts as no objection once `mcp.hook_deadline` passes, and one that crashes
 * while answering counts as no objection too (`on_error: allow`, the default); the round's
 * log line says which, and the turn ends normally. Two hung gates share one deadline: the
 * fan-out asks every gate at once. Judged by the rounds' log lines; how soon the merged
 * answer comes is bench/hooks.ts's figure.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { World, type DaemonProc } from "../kit/world.js";
import { gateServer, type Line, rounds } from "./fixtures/gates-helpers.js";

let w: World;
let d: DaemonProc;
const ch: Record<string, string> = {};

before(async () => {
  w = await World.create({ channelName: "hung-room" });
  ch.hung = w.channel;
  ch.crash = await w.addChannel({ name: "crash-room" });
  ch.hungWait = await w.addChannel({ name: "hung-approval-room" });
  ch.twoHung = await w.addChannel({ name: "two-hung-room" });
  const calls = join(w.dir, "two-hung-calls.txt");
  d = await w.startDaemon({
    mcp: {
      servers: {
        hung: gateServer({ GATE_HANG: "1" }),
        crash: gateServer({ GATE_STOP_TEXT: "never seen", GATE_CRASH_AFTER: "1" }),
        approval: { ...gateServer({ GATE_HANG: "1" }), stop: "wait" },
        // Answers (objects once) only when both hung gates have been asked: within one
        // deadline only if the fan-out asks them all at once.
        together: gateServer({ GATE_STOP_TEXT: "asked together", GATE_OBJECT_TIMES: "1", GATE_AWAIT_FILE: calls, GATE_AWAIT_CALLS: "2" }),
        hung1: gateServer({ GATE_HANG: "1", GATE_COUNTER_FILE: calls }),
        hung2: gateServer({ GATE_HANG: "1", GATE_COUNTER_FILE: calls }),
      },
      hook_deadline: "1s",
    },
    gates: { enforce: "bridge", wait_poll: "1s", wait_max: "4s" },
    defaults: { mcp: [] },
    channels: [
      { id: ch.hung, mcp: ["hung"] },
      { id: ch.crash, mcp: ["crash"] },
      { id: ch.hungWait, mcp: ["approval"] },
      { id: ch.twoHung, mcp: ["together", "hung1", "hung2"] },
    ],
  });
});
after(() => w.close());

test("a gate that never answers _Stop does not hold the turn past the hook deadline: no objection, logged as timed out", async () => {
  const mark = d.logs.length;
  const ev = await w.owner.post("@agent tidy up");
  await w.waitReply(ev);
  await w.waitReaction(ev, "✅", 40_000);
  const end = await d.waitLog((l) => l.evt === "turn.end" && l.scope === `${ch.hung}/${ev.id}`);
  assert.equal(end.status, "answered");
  const rs = rounds(d, mark, end.turn);
  assert.equal(rs.length, 1);
  assert.equal(rs[0]!.verdict, "allow");
  assert.deepEqual(
    (rs[0]!.servers as Line[]).map((s) => [s.name, s.verdict, s.timed_out]),
    [["hung", "allow", true]],
  );
  assert.equal(d.logs.slice(mark, d.logs.indexOf(end)).filter((l) => l.evt === "agent.turn_end").length, 1, "no re-prompt");
});

test("two hung gates and a third that answers only once both were asked: one round under one deadline, the third's objection gets its re-prompt", async () => {
  const mark = d.logs.length;
  const ev = await w.owner.post("@agent finish the job", { channel: ch.twoHung });
  await w.waitReaction(ev, "✅", 40_000);
  const end = await d.waitLog((l) => l.evt === "turn.end" && l.scope === `${ch.twoHung}/${ev.id}`);
  assert.equal(end.status, "answered");
  const rs = rounds(d, mark, end.turn);
  assert.deepEqual(
    (rs[0]!.servers as Line[]).map((s) => [s.name, s.verdict, s.timed_out]),
    [
      ["together", "object", false],
      ["hung1", "allow", true],
      ["hung2", "allow", true],
    ],
    "the first round: both hung gates timed out in it, and the gate waiting for them answered in time",
  );
  assert.deepEqual(
    rs.map((r) => r.verdict),
    ["object", "allow"],
  );
  assert.equal(
    d.logs.slice(mark, d.logs.indexOf(end)).filter((l) => l.evt === "agent.turn_end").length,
    2,
    "one re-prompt for the objection",
  );
});

test("a gate that crashes while answering _Stop counts as no objection; the turn ends", async () => {
  const mark = d.logs.length;
  const ev = await w.owner.post("@agent wrap it up", { channel: ch.crash });
  await w.waitReaction(ev, "✅", 40_000);
  const end = await d.waitLog((l) => l.evt === "turn.end" && l.scope === `${ch.crash}/${ev.id}`);
  assert.equal(end.status, "answered");
  const rs = rounds(d, mark, end.turn);
  assert.equal(rs.length, 1);
  const [server] = rs[0]!.servers as Line[];
  assert.deepEqual([server!.name, server!.verdict], ["crash", "allow"]);
  assert.ok(server!.error, "the crash is logged on the round");
});

test("a `stop: wait` gate that never answers has not approved: the turn waits (⏳) and ends with the wait_max notice, not ✅", async () => {
  const ev = await w.owner.post("@agent ship it", { channel: ch.hungWait });
  await w.waitReaction(ev, "⏳", 30_000);
  const replies = await w.waitEvents(
    { kinds: [9], authors: [w.agent.pk], "#e": [ev.id] },
    (e) => e.some((m) => /Gave up waiting for gate 'approval'/.test(m.content)),
    40_000,
  );
  assert.ok(replies.length >= 1);
  const reactions = await w.query({ kinds: [7], authors: [w.agent.pk], "#e": [ev.id] });
  assert.ok(
    !reactions.some((r) => r.content === "✅" && r.created_at < Math.max(...replies.map((m) => m.created_at))),
    "no approval was assumed before the notice",
  );
});
