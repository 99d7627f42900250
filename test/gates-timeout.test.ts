/**
 * `stop: wait` gates are bounded by `gates.wait_max`: an approval
 * nobody gives ends the turn with a notice in the thread naming the gate, and a poll
 * that cannot be answered in time (a slow relay behind the gate) is "no answer yet",
 * never an approval — only the gate's own "" ends a wait. A shutdown cuts a wait short
 * cleanly: the turn is left for the restart, which does not answer it twice.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { World, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { approvalGate, type Line, rounds } from "./fixtures/gates-helpers.js";

let w: World;
let d: DaemonProc;
const ch: Record<string, string> = {};

before(async () => {
  w = await World.create({ channelName: "approval-room" });
  ch.approval = w.channel;
  ch.slow = await w.addChannel({ name: "slow-room" });
  const approval = await approvalGate(w, { approvers: [w.teammate.pk], countFile: join(w.dir, "approval-count.txt") });
  // Its reaction checks take longer than the hook deadline, so every poll times out.
  const slow = await approvalGate(w, {
    approvers: [w.teammate.pk],
    countFile: join(w.dir, "slow-count.txt"),
    channel: ch.slow,
    env: { APPROVAL_CHECK_DELAY_MS: "2500" },
  });
  d = await w.startDaemon({
    mcp: { servers: { approval: approval.server, slow: slow.server }, hook_deadline: "1500ms" },
    gates: { enforce: "bridge", wait_poll: "1s", wait_max: "3s" },
    // Shorter than wait_max: a shutdown has to cut a wait short.
    shutdown_grace: "1s",
    defaults: { mcp: [] },
    channels: [
      { id: ch.approval, mcp: ["approval"] },
      { id: ch.slow, mcp: ["slow"] },
    ],
  });
});
after(() => w.close());

async function gaveUpNotice(ev: Event): Promise<Event> {
  const evs = await w.waitEvents(
    { kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] },
    (e) => e.some((x) => /Gave up waiting/.test(x.content)),
    40_000,
  );
  return evs.find((x) => /Gave up waiting/.test(x.content))!;
}

test("wait_max: an approval nobody gives ends the turn with ⚠️ and a notice naming the gate, never ✅", async () => {
  const mark = d.logs.length;
  const ev = await w.owner.post("@agent cut the release");
  await w.waitReaction(ev, "⏳", 40_000);
  const notice = await gaveUpNotice(ev);
  assert.match(notice.content, /'approval'/, "the notice names the gate");
  assert.ok(
    notice.tags.some((t) => t[0] === "p" && t[1] === w.owner.pk),
    "the notice mentions the requester",
  );
  const end = await d.waitLog((l) => l.evt === "turn.end" && l.scope === `${ch.approval}/${ev.id}`);
  assert.equal(end.status, "answered", "the turn ends; the queue moves on");
  const reactions = await w.waitEvents({ kinds: [KIND.reaction], authors: [w.agent.pk], "#e": [ev.id] }, (e) =>
    e.some((r) => r.content === "⚠️"),
  );
  assert.ok(!reactions.some((r) => r.content === "✅"), "a gate that never allowed never ends ✅");
  const rs = rounds(d, mark, end.turn);
  assert.ok(rs.length >= 2 && rs.every((r) => r.verdict === "object"), `the gate kept objecting: ${rs.map((r) => r.verdict)}`);
  assert.equal(d.logs.slice(mark, d.logs.indexOf(end)).filter((l) => l.evt === "agent.turn_end").length, 1, "waiting cost no model turn");
});

test("a poll that times out while waiting is not an approval: the wait goes on until wait_max", async () => {
  const mark = d.logs.length;
  const ev = await w.owner.post("@agent deploy it", { channel: ch.slow });
  await w.waitReaction(ev, "⏳", 40_000);
  const notice = await gaveUpNotice(ev);
  assert.match(notice.content, /'slow'/);
  const end = await d.waitLog((l) => l.evt === "turn.end" && l.scope === `${ch.slow}/${ev.id}`);
  const rs = rounds(d, mark, end.turn);
  const polls = rs.slice(1);
  assert.ok(polls.length >= 1, "the gate was polled");
  for (const p of polls) {
    assert.deepEqual(
      (p.servers as Line[]).map((s) => [s.name, s.timed_out]),
      [["slow", true]],
      "the poll timed out (the proxy counts that as allow)",
    );
    assert.equal(p.verdict, "object", "the bridge keeps waiting");
  }
  // A gate that never allowed never ends ✅: the turn is over, but not approved.
  const reactions = await w.waitEvents({ kinds: [KIND.reaction], authors: [w.agent.pk], "#e": [ev.id] }, (e) =>
    e.some((r) => r.content === "⚠️"),
  );
  assert.ok(!reactions.some((r) => r.content === "✅"), "no ✅ after giving up");
});

// Last: it stops the shared daemon.
test("shutdown during a wait: the daemon stops after its grace, the turn is left for the restart, which does not answer twice", async () => {
  const ev = await w.owner.post("@agent promote the build");
  await w.waitReaction(ev, "⏳");
  const scope = `${w.channel}/${ev.id}`;
  assert.equal(await d.stop(), 0, "clean exit");
  const interrupted = d.logs.find((l) => l.evt === "turn.interrupted" && l.scope === scope);
  assert.ok(interrupted, "the waiting turn was interrupted by the shutdown, not failed");

  const again = await w.startDaemon({}, { configFile: d.configFile });
  const line = await again.waitLog((l) => l.evt === "turn.already_answered" && l.scope === scope, 30_000);
  assert.ok(line, "after the restart the turn is not run again: the agent had answered");
  const replies = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] });
  assert.equal(replies.length, 1, "one answer, no duplicate");
});
