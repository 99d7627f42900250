/**
 * A provider's limit holds a scope (Scheduler.hold, docs/agents.md "When the provider
 * fails"): the turn runs again once the limit resets, as the same turn and not counted as
 * an attempt, never later than queue.hold_max; the scope shows as held until then, and
 * `!cancel` ends the wait. Over the real SQLite backend (the queue harness).
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { owner, CHANNEL, mention, fromWire, tempDir } from "../../kit/queue-helpers.js";
import { place, type QueueOptions } from "../fixtures/queue-harness.js";

const tmp = tempDir("bb-queue-hold-");
after(() => tmp.cleanup());

async function fresh(o?: QueueOptions) {
  const p = await place("sqlite", { dir: tmp.dir });
  return p.open(o);
}

test("a held turn runs again after the reset as the same turn, its attempt not counted, and logs turn.held with until", async () => {
  const q = await fresh({ maxAttempts: 1 });
  const ev = fromWire(mention(owner, "summarise the release"));
  await q.scheduler.accept(ev, CHANNEL);
  const turn = await q.next();
  const until = Date.now() + 1_500;
  const at = q.scheduler.hold(turn.turnId, until, "held for the provider's limit: 429");
  assert.equal(at, until);
  assert.deepEqual(
    q.scheduler.heldScopes().map((h) => [h.scope, h.channel, h.until]),
    [[`${CHANNEL}/${ev.id}`, CHANNEL, until]],
  );
  const held = q.lines.filter((l) => l.evt === "turn.held");
  assert.deepEqual(
    held.map((l) => [l.turn, l.until]),
    [[turn.turnId, new Date(until).toISOString()]],
  );
  const again = await q.next(10_000);
  // The backend's clock is in whole milliseconds; the turn never runs before the reset.
  assert.ok(Date.now() >= until - 5, "not run before the limit resets");
  assert.deepEqual([again.turnId, again.attempt, again.events.map((e) => e.id)], [turn.turnId, 1, [ev.id]]);
  assert.deepEqual(q.scheduler.heldScopes(), [], "running again: no longer held");
  // With max_attempts 1 a failure now is final: the hold took nothing from the attempts.
  assert.equal(q.scheduler.fail(again.turnId, "still failing", { retry: true }), "failed");
  await q.close();
});

test("a hold is never longer than queue.hold_max", async () => {
  const q = await fresh({ holdMaxMs: 60_000 });
  const ev = fromWire(mention(owner, "later"));
  await q.scheduler.accept(ev, CHANNEL);
  const turn = await q.next();
  const before = Date.now();
  const at = q.scheduler.hold(turn.turnId, before + 10 * 3_600_000, "held")!;
  assert.ok(at <= Date.now() + 60_000 && at >= before + 60_000, `held until ${at - before} ms from now`);
  await q.close();
});

test("!cancel ends a held scope's wait: the turn is cancelled, never run, and the scope no longer shows as held", async () => {
  const q = await fresh();
  const ev = fromWire(mention(owner, "wait for it"));
  await q.scheduler.accept(ev, CHANNEL);
  const turn = await q.next();
  q.scheduler.hold(turn.turnId, Date.now() + 3_600_000, "held");
  await q.idle();
  const r = await q.scheduler.cancel({ channel: CHANNEL, thread: ev.id });
  assert.deepEqual(r, { runningTurnIds: [], ended: 1 });
  assert.equal((await q.backend.turn(turn.turnId))?.state, "cancelled");
  assert.deepEqual(q.scheduler.heldScopes(), []);
  assert.equal((await q.scheduler.currentDepth()).queued, 0);
  await q.close();
});

test("a hold of a turn not running here does nothing", async () => {
  const q = await fresh();
  assert.equal(q.scheduler.hold(4242, Date.now() + 1000, "held"), undefined);
  assert.deepEqual(q.scheduler.heldScopes(), []);
  await q.close();
});
