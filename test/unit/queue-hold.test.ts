/**
 * A provider's limit holds a scope (Scheduler.hold, docs/agents.md "When the provider
 * fails"): the turn runs again once the limit resets, as the same turn and not counted as
 * an attempt, its holds together never past queue.hold_max from the first (then a limit
 * fails it with the failure notice); the scope shows as held until then, and `!cancel` ends
 * the wait. Over the real SQLite backend (the queue harness).
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

test("a provider that names a fresh reset at every try holds the mention at most queue.hold_max in all: then it fails with the failure notice", async () => {
  const q = await fresh({ holdMaxMs: 1_500 });
  const ev = fromWire(mention(owner, "summarise the release"));
  await q.scheduler.accept(ev, CHANNEL);
  const first = await q.next();
  const before = Date.now();
  const at1 = q.scheduler.hold(first.turnId, before + 1_000, "held for the provider's limit: 429");
  const after = Date.now();
  assert.equal(at1, before + 1_000, "the first hold is within hold_max: until the reset");
  const second = await q.next(10_000);
  assert.equal(second.turnId, first.turnId);
  // A fresh reset a second away again: the holds together end 1.5 s after the first.
  const at2 = q.scheduler.hold(second.turnId, Date.now() + 1_000, "held for the provider's limit: 429")!;
  assert.ok(at2 >= before + 1_500 && at2 <= after + 1_500, `second hold until ${at2 - before} ms after the first`);
  const third = await q.next(10_000);
  assert.ok(Date.now() >= at2 - 5, "not run before the holds' end");
  assert.equal(q.failures.length, 0, "no failure while held");
  assert.equal(q.scheduler.hold(third.turnId, Date.now() + 1_000, "held for the provider's limit: 429"), undefined);
  await q.idle();
  assert.deepEqual(
    q.failures.map((f) => [f.turnId, f.events.map((e) => e.id), f.error]),
    [
      [
        first.turnId,
        [ev.id],
        "the model provider's limit still held after queue.hold_max (1500ms) of waiting (held for the provider's limit: 429)",
      ],
    ],
  );
  assert.equal((await q.backend.turn(first.turnId))?.state, "failed");
  assert.deepEqual(q.scheduler.heldScopes(), []);
  assert.equal((await q.scheduler.currentDepth()).queued, 0, "nothing left waiting");
  await q.close();
});

test("queue.hold_max counts from the first hold across a restart", async () => {
  const p = await place("sqlite", { dir: tmp.dir });
  const q1 = await p.open({ holdMaxMs: 1_000 });
  const ev = fromWire(mention(owner, "later"));
  await q1.scheduler.accept(ev, CHANNEL);
  const turn = await q1.next();
  q1.scheduler.hold(turn.turnId, Date.now() + 3_600_000, "held for the provider's limit: 429");
  await q1.close();
  const q2 = await p.open({ holdMaxMs: 1_000 });
  const again = await q2.next(10_000);
  assert.equal(again.turnId, turn.turnId);
  assert.equal(q2.scheduler.hold(again.turnId, Date.now() + 3_600_000, "held for the provider's limit: 429"), undefined);
  await q2.idle();
  assert.deepEqual(
    q2.failures.map((f) => [f.turnId, f.events.map((e) => e.id)]),
    [[turn.turnId, [ev.id]]],
  );
  await q2.close();
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
