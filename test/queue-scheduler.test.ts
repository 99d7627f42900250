/**
 * Scheduling over the durable store: one turn per scope, batching while busy, global
 * concurrency, fairness, the per-scope cap with a visible notice, retries with backoff
 * and the final failure notice, and `!cancel`.
 */
import { test, describe, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { QueueStore } from "../src/queue/store.js";
import { Scheduler, type SchedulerOptions, type FinalFailure } from "../src/queue/scheduler.js";
import type { Refusal } from "../src/queue/refusals.js";
import { owner, teammate, CHANNEL, mention, fromWire, captureLogger, tempDir } from "./fixtures/queue-helpers.js";
import { waitFor } from "./fixtures/wait.js";

const tmp = tempDir("bb-queue-sched-");
after(() => tmp.cleanup());
let n = 0;
const OTHER = "6f1c2a4e-0000-4000-8000-000000000002";

function setup(opts: Partial<SchedulerOptions> = {}) {
  const store = QueueStore.open(join(tmp.dir, `s${++n}`));
  const { logger, lines } = captureLogger();
  let now = 1_000_000;
  const refusals: Refusal[] = [];
  const failures: FinalFailure[] = [];
  const scheduler = new Scheduler({
    store,
    logger,
    sessionScope: "thread",
    maxConcurrent: 4,
    now: () => now,
    onRefused: (r) => refusals.push(r),
    onFinalFailure: (f) => failures.push(f),
    ...opts,
  });
  after(() => (scheduler.close(), store.close()));
  return { store, scheduler, lines, refusals, failures, advance: (ms: number) => (now += ms) };
}

const inThread = (root: string, text: string, at?: number) =>
  fromWire(mention(teammate, text, { tags: [["e", root, "", "reply"]], created_at: at }));
const ids = (evs: Event[]) => evs.map((e) => e.id);

describe("scheduler", () => {
  test("a mid-turn message joins the running turn durably (a restart replays it with the turn, once); handed back, it waits for its own turn", () => {
    const { scheduler, store } = setup();
    const top = fromWire(mention(owner, "start", { created_at: 100 }));
    scheduler.accept(top, CHANNEL);
    const turn = scheduler.next()!;
    const steer = inThread(top.id, "also this", 101);
    const later = inThread(top.id, "and this", 102);
    scheduler.accept(steer, CHANNEL);
    scheduler.accept(later, CHANNEL);
    assert.equal(scheduler.runningTurn(turn.scope.key), turn.turnId);
    assert.equal(scheduler.joinRunning(turn.turnId, steer.id), true);
    assert.equal(scheduler.joinRunning(turn.turnId, steer.id), false, "only a waiting event joins, once");
    assert.deepEqual(store.turn(turn.turnId)!.trigger_ids, [top.id, steer.id]);
    assert.equal(store.event(steer.id)!.state, "in_turn");
    assert.equal(scheduler.depth().queued, 1, "only the other message still waits");

    // A restart now: the recovered turn carries the steered message, and it is not queued twice.
    const again = new Scheduler({ store, logger: captureLogger().logger, sessionScope: "thread", maxConcurrent: 4, now: () => 1_000_000 });
    assert.deepEqual(again.recover(), { events: 1, turns: 1 });
    const replay = again.next()!;
    assert.deepEqual(ids(replay.events), [top.id, steer.id]);
    assert.equal(again.next(), null, "the scope is busy with its replay");
    again.close();

    // In this process: the turn could not take it after all; it waits again, then runs on its own.
    scheduler.leaveRunning(turn.turnId, [steer.id]);
    assert.deepEqual(store.turn(turn.turnId)!.trigger_ids, [top.id]);
    scheduler.complete(turn.turnId);
    assert.equal(store.event(top.id)!.state, "done");
    const next = scheduler.next()!;
    assert.deepEqual(ids(next.events), [steer.id, later.id]);
  });

  test("a waiting event its author deleted leaves the queue without a turn; a running turn can be cancelled alone", () => {
    const { scheduler, store } = setup();
    const a = fromWire(mention(owner, "a", { created_at: 100 }));
    scheduler.accept(a, CHANNEL);
    const t = scheduler.next()!;
    const b = inThread(a.id, "b", 101);
    scheduler.accept(b, CHANNEL);
    assert.equal(scheduler.dropWaiting(t.scope.key, b.id), true);
    assert.equal(store.event(b.id)!.state, "deleted");
    assert.equal(scheduler.dropWaiting(t.scope.key, a.id), false, "in a turn: not waiting");
    assert.equal(scheduler.cancelRunning(t.turnId, "deleted"), true);
    assert.equal(store.turn(t.turnId)!.state, "cancelled");
    assert.equal(scheduler.runningTurn(t.scope.key), undefined, "nothing more joins a cancelled turn");
    assert.equal(scheduler.complete(t.turnId), true);
    assert.equal(store.turn(t.turnId)!.state, "cancelled", "the agent reporting its end does not undo the cancel");
    assert.equal(scheduler.next(), null, "nothing left to run");
  });

  test("one turn per scope; what arrives meanwhile is batched, ordered by created_at", () => {
    const { scheduler } = setup();
    const top = fromWire(mention(owner, "start", { created_at: 100 }));
    assert.equal(scheduler.accept(top, CHANNEL), true);
    assert.equal(scheduler.accept(top, CHANNEL), false, "duplicate");
    const b1 = scheduler.next()!;
    assert.deepEqual(ids(b1.events), [top.id]);
    assert.equal(b1.scope.root, top.id);
    // Replies in the same thread while the turn runs; a relay replays newest first.
    const r3 = inThread(top.id, "three", 103);
    const r1 = inThread(top.id, "one", 101);
    const r2 = inThread(top.id, "two", 102);
    for (const r of [r3, r1, r2]) scheduler.accept(r, CHANNEL);
    assert.equal(scheduler.next(), null, "the scope is busy");
    assert.deepEqual(scheduler.depth(), { inFlight: 1, queued: 3, scopes: 1, retrying: 0 });
    scheduler.complete(b1.turnId);
    const b2 = scheduler.next()!;
    assert.deepEqual(ids(b2.events), [r1.id, r2.id, r3.id]);
    assert.equal(b2.turnId !== b1.turnId, true);
  });

  test("batches hold at most 50 events; the rest waits for the next turn", () => {
    const { scheduler } = setup({ sessionScope: "channel" });
    for (let i = 0; i < 60; i++) scheduler.accept(fromWire(mention(owner, `m${i}`, { created_at: 1000 + i })), CHANNEL);
    const b = scheduler.next()!;
    assert.equal(b.events.length, 50);
    scheduler.complete(b.turnId);
    assert.equal(scheduler.next()!.events.length, 10);
  });

  test("global concurrency and oldest-waiting-scope-first", () => {
    const { scheduler } = setup({ maxConcurrent: 2 });
    const a = fromWire(mention(owner, "a", { created_at: 300 }));
    const b = fromWire(mention(owner, "b", { created_at: 100 }));
    const c = fromWire(mention(owner, "c", { created_at: 200, channel: OTHER }));
    for (const e of [a, b, c]) scheduler.accept(e, e === c ? OTHER : CHANNEL);
    const first = scheduler.next()!;
    const second = scheduler.next()!;
    assert.deepEqual([first.events[0]!.id, second.events[0]!.id], [b.id, c.id]);
    assert.equal(scheduler.next(), null, "max_concurrent reached");
    scheduler.complete(first.turnId);
    assert.equal(scheduler.next()!.events[0]!.id, a.id);
  });

  test("per-scope cap: above it the oldest waiting events are refused with a notice", async () => {
    const { scheduler, refusals, lines, store } = setup({ sessionScope: "channel", scopeCap: 5 });
    const evs = Array.from({ length: 8 }, (_, i) => fromWire(mention(owner, `m${i}`, { created_at: 500 + i })));
    for (const e of evs) scheduler.accept(e, CHANNEL);
    await new Promise((r) => setImmediate(r));
    assert.equal(refusals.length, 1, "coalesced into one notice");
    assert.equal(refusals[0]!.reason, "scope-cap");
    assert.deepEqual(
      refusals[0]!.events.map((e) => e.id),
      ids(evs.slice(0, 3)),
    );
    assert.equal(refusals[0]!.events[0]!.author, owner.pk);
    assert.equal(lines.filter((l) => l.evt === "queue.refused").length, 3, "each refusal logged");
    assert.equal(store.event(evs[0]!.id)?.state, "refused");
    assert.deepEqual(ids(scheduler.next()!.events), ids(evs.slice(3)));
  });

  test("failed turns retry after 5 s, then 5 min, then fail for good with a notice", () => {
    const { scheduler, failures, advance, store } = setup();
    const ev = fromWire(mention(owner, "flaky"));
    scheduler.accept(ev, CHANNEL);
    let b = scheduler.next()!;
    assert.equal(b.attempt, 1);
    scheduler.recordReply(b.turnId, "a".repeat(64));
    assert.equal(scheduler.fail(b.turnId, "agent crashed"), "retry");
    assert.equal(scheduler.next(), null, "not before the backoff");
    assert.equal(scheduler.depth().retrying, 1);
    advance(4_999);
    assert.equal(scheduler.next(), null);
    advance(1);
    b = scheduler.next()!;
    assert.equal(b.attempt, 2);
    assert.deepEqual(b.publishedReplyIds, ["a".repeat(64)]);
    assert.equal(scheduler.fail(b.turnId, "agent crashed again"), "retry");
    advance(299_999);
    assert.equal(scheduler.next(), null);
    advance(1);
    b = scheduler.next()!;
    assert.equal(b.attempt, 3);
    assert.equal(scheduler.fail(b.turnId, "still broken"), "failed");
    assert.equal(failures.length, 1);
    assert.deepEqual(ids(failures[0]!.events), [ev.id]);
    assert.equal(failures[0]!.error, "still broken");
    assert.equal(failures[0]!.attempts, 3);
    assert.equal(store.event(ev.id)?.state, "failed");
    assert.equal(scheduler.next(), null);
  });

  test("a failure marked not retryable ends at once", () => {
    const { scheduler, failures } = setup();
    scheduler.accept(fromWire(mention(owner, "x")), CHANNEL);
    const b = scheduler.next()!;
    assert.equal(scheduler.fail(b.turnId, "refused", { retry: false }), "failed");
    assert.equal(failures.length, 1);
  });

  test("!cancel ends waiting, retrying and running work in the scope as cancelled", () => {
    const { scheduler, store } = setup({ sessionScope: "channel" });
    const a = fromWire(mention(owner, "a", { created_at: 10 }));
    const b = fromWire(mention(owner, "b", { created_at: 11 }));
    scheduler.accept(a, CHANNEL);
    const running = scheduler.next()!;
    scheduler.accept(b, CHANNEL);
    const res = scheduler.cancel({ channel: CHANNEL });
    assert.deepEqual(res, { runningTurnIds: [running.turnId], ended: 2 });
    assert.equal(store.event(a.id)?.state, "cancelled");
    assert.equal(store.event(b.id)?.state, "cancelled");
    // The slot stays taken until the agent side reports the cancelled turn ended.
    scheduler.accept(fromWire(mention(owner, "c", { created_at: 12 })), CHANNEL);
    assert.equal(scheduler.next(), null);
    assert.equal(scheduler.fail(running.turnId, "cancelled"), "ignored");
    assert.equal(store.turn(running.turnId)?.state, "cancelled");
    assert.equal(scheduler.next()!.events[0]!.content, "c");
    assert.deepEqual(scheduler.cancel({ channel: OTHER }), { runningTurnIds: [], ended: 0 });
  });

  test("!cancel in a thread names that thread's scope only", () => {
    const { scheduler } = setup();
    const t1 = fromWire(mention(owner, "t1"));
    const t2 = fromWire(mention(owner, "t2"));
    scheduler.accept(t1, CHANNEL);
    scheduler.accept(t2, CHANNEL);
    assert.deepEqual(scheduler.cancel({ channel: CHANNEL, thread: t1.id }).ended, 1);
    assert.deepEqual(ids(scheduler.next()!.events), [t2.id]);
    assert.equal(scheduler.next(), null);
  });

  test("onWake fires after accept and when a retry comes due", async () => {
    let wakes = 0;
    const { scheduler } = setup({ onWake: () => void wakes++, backoff: { baseMs: 20, factor: 1, maxMs: 20 }, now: Date.now });
    scheduler.accept(fromWire(mention(owner, "x")), CHANNEL);
    await Promise.resolve();
    assert.equal(wakes, 1);
    const b = scheduler.next()!;
    scheduler.fail(b.turnId, "boom");
    // Woken after fail, then again by the retry timer (bounded wait, no timing assertion).
    await waitFor(() => wakes >= 3, {
      timeoutMs: 5000,
      intervalMs: 10,
      what: () => `a wake after fail and one when the retry came due (${wakes} wakes)`,
    });
    assert.ok(wakes >= 3, `woken after fail and when the retry came due (${wakes})`);
    assert.equal(scheduler.next()?.attempt, 2);
  });

  test("recovery keeps a pending retry's due time", () => {
    const dir = join(tmp.dir, "recover");
    const { logger } = captureLogger();
    const store = QueueStore.open(dir);
    let now = 5_000_000;
    const s1 = new Scheduler({ store, logger, sessionScope: "channel", maxConcurrent: 1, now: () => now });
    s1.accept(fromWire(mention(owner, "a")), CHANNEL);
    const b = s1.next()!;
    s1.fail(b.turnId, "crash");
    s1.close();
    const s2 = new Scheduler({ store, logger, sessionScope: "channel", maxConcurrent: 1, now: () => now });
    assert.deepEqual(s2.recover(), { events: 0, turns: 1 });
    assert.equal(s2.next(), null, "retry not yet due");
    now += 5_000;
    const again = s2.next()!;
    assert.equal(again.turnId, b.turnId);
    assert.equal(again.attempt, 2);
    s2.close();
    store.close();
  });
});
