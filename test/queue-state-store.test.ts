/**
 * The queue's contract, through the path the daemon takes — the one Scheduler over the
 * backend, the amendments and the gate's once-only claims — run against both backends:
 * SQLite (a file under state_dir) and PostgreSQL (a real server started by the test, a fresh
 * database per test). One turn per scope with arrivals batched, the caps with their notices,
 * fairness, retries and the final failure notice, `!cancel`, mid-turn joins, deletions and
 * edits, a restart resuming what was left, retention: whatever a user sees must hold in both.
 */
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import { Amendments } from "../src/intake/amend.js";
import { owner, teammate, CHANNEL, mention, fromWire, tempDir, captureLogger } from "../kit/queue-helpers.js";
import { postgresOrSkip, type PgServer } from "../kit/postgres.js";
import { place, type BackendName, type Place, type Queue } from "./fixtures/queue-harness.js";
import { KIND } from "../src/nostr/kinds.js";
import { waitFor } from "../kit/wait.js";

const tmp = tempDir("bb-queue-contract-");
/**
 * Both backends, unless BB_QUEUE_BACKENDS names some (a comma list): `npm run mutate` runs the
 * SQLite half per mutant, where starting a PostgreSQL server each time would cost more than
 * the tests (stryker.config.mjs).
 */
const BACKENDS = (process.env.BB_QUEUE_BACKENDS ?? "sqlite,postgres").split(",") as BackendName[];
let pgServer: PgServer | undefined;
let pgSkip: string | undefined;
before(async () => {
  if (!BACKENDS.includes("postgres")) return;
  const r = await postgresOrSkip();
  if (typeof r === "string") pgSkip = r;
  else pgServer = r;
});
after(async () => {
  await pgServer?.stop();
  tmp.cleanup();
});

const OTHER = "6f1c2a4e-0000-4000-8000-000000000002";
const ids = (evs: Event[]) => evs.map((e) => e.id);
const inThread = (root: string, text: string, at?: number) =>
  fromWire(mention(teammate, text, { tags: [["e", root, "", "reply"]], created_at: at }));

for (const name of BACKENDS) {
  describe(`queue contract (${name})`, () => {
    const t = (title: string, fn: (p: Place) => Promise<void>) =>
      test(title, { timeout: 30_000 }, async (ctx) => {
        if (name === "postgres" && pgSkip) return ctx.skip(pgSkip);
        await fn(await place(name, { dir: tmp.dir, pg: pgServer }));
      });

    t("an accepted event is stored once and runs in a turn of its own thread; a duplicate id changes nothing", async (p) => {
      const q = await p.open();
      const ev = fromWire(mention(owner, "hello"));
      assert.equal(await q.scheduler.accept(ev, CHANNEL), true);
      assert.equal(await q.scheduler.accept(ev, CHANNEL), false, "a relay replay");
      const b = await q.next();
      assert.deepEqual(ids(b.events), [ev.id]);
      assert.deepEqual([b.scope.key, b.scope.root, b.attempt, b.recovered], [`${CHANNEL}/${ev.id}`, ev.id, 1, false]);
      assert.deepEqual(b.events[0], ev);
      assert.equal(q.scheduler.storedEvent(ev.id)?.id, ev.id);
      await q.idle();
      assert.deepEqual(q.batches, [], "one turn, not two");
      assert.equal(q.scheduler.complete(b.turnId), true);
      assert.equal(q.scheduler.complete(b.turnId), false, "ended once");
      await q.idle();
      assert.equal((await q.backend.event(ev.id))?.state, "done");
      await q.close();
    });

    t("one turn per scope: what arrives meanwhile is batched into the next turn, ordered by created_at", async (p) => {
      const q = await p.open();
      const top = fromWire(mention(owner, "start", { created_at: 100 }));
      await q.scheduler.accept(top, CHANNEL);
      const b1 = await q.next();
      // Replies in the same thread while the turn runs; a relay replays newest first.
      const r3 = inThread(top.id, "three", 103);
      const r1 = inThread(top.id, "one", 101);
      const r2 = inThread(top.id, "two", 102);
      for (const r of [r3, r1, r2]) await q.scheduler.accept(r, CHANNEL);
      await q.idle();
      assert.deepEqual(q.batches, [], "the scope is busy");
      const depth = await q.scheduler.currentDepth();
      assert.deepEqual([depth.queued, depth.scopes, depth.retrying, depth.byChannel.get(CHANNEL)], [3, 1, 0, 3]);
      assert.equal(q.scheduler.depth().inFlight, 1);
      q.scheduler.complete(b1.turnId);
      const b2 = await q.next();
      assert.deepEqual(ids(b2.events), [r1.id, r2.id, r3.id]);
      assert.notEqual(b2.turnId, b1.turnId);
      await q.close();
    });

    t("a batch holds at most 50 events; the rest waits for the next turn", async (p) => {
      const q = await p.open({ sessionScope: "channel", maxConcurrent: 1 });
      const first = fromWire(mention(owner, "first", { created_at: 999 }));
      await q.scheduler.accept(first, CHANNEL);
      const b0 = await q.next();
      for (let i = 0; i < 60; i++) await q.scheduler.accept(fromWire(mention(owner, `m${i}`, { created_at: 1000 + i })), CHANNEL);
      q.scheduler.complete(b0.turnId);
      const b = await q.next();
      assert.equal(b.events.length, 50);
      assert.equal(b.events[0]!.content, "m0");
      q.scheduler.complete(b.turnId);
      assert.equal((await q.next()).events.length, 10);
      await q.close();
    });

    t("max_concurrent bounds the turns in flight; a freed slot goes to the scope with the oldest waiting mention", async (p) => {
      const q = await p.open({ maxConcurrent: 1 });
      const busy = fromWire(mention(owner, "busy", { created_at: 50 }));
      await q.scheduler.accept(busy, CHANNEL);
      const running = await q.next();
      const a = fromWire(mention(owner, "a", { created_at: 300 }));
      const b = fromWire(mention(owner, "b", { created_at: 100 }));
      const c = fromWire(mention(owner, "c", { created_at: 200, channel: OTHER }));
      for (const e of [a, b, c]) await q.scheduler.accept(e, e === c ? OTHER : CHANNEL);
      await q.idle();
      assert.deepEqual(q.batches, [], "max_concurrent reached");
      const order: string[] = [];
      let turn = running.turnId;
      for (let i = 0; i < 3; i++) {
        q.scheduler.complete(turn);
        const next = await q.next();
        order.push(next.events[0]!.content);
        turn = next.turnId;
      }
      assert.deepEqual(order, ["b", "c", "a"]);
      await q.close();
    });

    t("two mentions from one second wait for a slot: the one that arrived first runs first, whatever their ids", async (p) => {
      const q = await p.open({ maxConcurrent: 1 });
      const busy = fromWire(mention(owner, "busy", { created_at: 50 }));
      await q.scheduler.accept(busy, CHANNEL);
      const running = await q.next();
      const pair = [fromWire(mention(owner, "x", { created_at: 100 })), fromWire(mention(owner, "y", { created_at: 100 }))];
      // The one with the greater id arrives first: an order by id would run the other first.
      const [early, late] = pair.sort((a, b) => (a.id > b.id ? -1 : 1));
      await q.scheduler.accept(early!, CHANNEL);
      await new Promise((r) => setTimeout(r, 5));
      await q.scheduler.accept(late!, CHANNEL);
      await q.idle();
      q.scheduler.complete(running.turnId);
      const first = await q.next();
      assert.deepEqual(ids(first.events), [early!.id]);
      q.scheduler.complete(first.turnId);
      assert.deepEqual(ids((await q.next()).events), [late!.id]);
      await q.close();
    });

    t("the scope cap: past it the oldest waiting mentions are refused, each logged, with one coalesced notice", async (p) => {
      // The burst is gathered until 2 s pass without a refusal: the eight arrivals are a burst
      // on a loaded machine too (100 ms of quiet, the default, can pass between two of them there).
      const q = await p.open({ sessionScope: "channel", scopeCap: 5, maxConcurrent: 1, refusalNotice: { quietMs: 2_000, maxMs: 20_000 } });
      const first = fromWire(mention(owner, "running", { created_at: 400 }));
      await q.scheduler.accept(first, CHANNEL);
      const running = await q.next();
      const evs = Array.from({ length: 8 }, (_, i) => fromWire(mention(owner, `m${i}`, { created_at: 500 + i })));
      for (const e of evs) await q.scheduler.accept(e, CHANNEL);
      await waitFor(() => q.refusals.length, { what: "the refusal notice" });
      assert.equal(q.refusals.length, 1, "coalesced into one notice");
      assert.equal(q.refusals[0]!.reason, "scope-cap");
      assert.deepEqual(
        q.refusals[0]!.events.map((e) => e.id),
        ids(evs.slice(0, 3)),
      );
      assert.equal(q.refusals[0]!.events[0]!.author, owner.pk);
      assert.equal(q.lines.filter((l) => l.evt === "queue.refused").length, 3, "each refusal logged");
      assert.equal((await q.backend.event(evs[0]!.id))?.state, "refused");
      q.scheduler.complete(running.turnId);
      assert.deepEqual(ids((await q.next()).events), ids(evs.slice(3)));
      await q.close();
    });

    t("the total cap: past it a new mention is refused (queue-full) with a notice; those already waiting keep their turn", async (p) => {
      const q = await p.open({ totalCap: 3, maxConcurrent: 1 });
      const first = fromWire(mention(owner, "running", { created_at: 10 }));
      await q.scheduler.accept(first, CHANNEL);
      const running = await q.next();
      const threads = [1, 2, 3, 4].map((i) => fromWire(mention(owner, `t${i}`, { created_at: 10 + i })));
      for (const e of threads) assert.equal(await q.scheduler.accept(e, CHANNEL), true, "stored, refused or not");
      await waitFor(() => q.refusals.length, { what: "the refusal notice" });
      assert.deepEqual(
        q.refusals.map((r) => [r.reason, r.events.map((e) => e.id)]),
        [["queue-full", [threads[3]!.id]]],
      );
      assert.equal((await q.backend.event(threads[3]!.id))?.state, "refused");
      assert.equal((await q.scheduler.currentDepth()).queued, 3);
      q.scheduler.complete(running.turnId);
      assert.equal((await q.next()).events[0]!.content, "t1");
      await q.close();
    });

    t("a failed turn is retried after its backoff with what it published known, then gives up with one failure notice", async (p) => {
      // A backoff long enough that the first retry is still waiting when the depth is read, on a loaded machine too.
      const q = await p.open({ backoff: { baseMs: 1000, factor: 2, maxMs: 2000 } });
      const ev = fromWire(mention(owner, "flaky"));
      await q.scheduler.accept(ev, CHANNEL);
      let b = await q.next();
      q.scheduler.recordReply(b.turnId, "a".repeat(64));
      assert.equal(q.scheduler.fail(b.turnId, "agent crashed"), "retry");
      await q.idle();
      assert.equal((await q.scheduler.currentDepth()).retrying, 1);
      b = await q.next();
      assert.deepEqual([b.attempt, b.publishedReplyIds], [2, ["a".repeat(64)]]);
      assert.equal(q.scheduler.fail(b.turnId, "agent crashed again"), "retry");
      b = await q.next();
      assert.equal(b.attempt, 3);
      assert.equal(q.scheduler.fail(b.turnId, "still broken"), "failed");
      await q.idle();
      assert.deepEqual(
        q.lines.filter((l) => l.evt === "queue.turn_retry").map((l) => l.retry_in_ms),
        [1000, 2000],
        "paced by the backoff",
      );
      assert.equal(q.failures.length, 1);
      assert.deepEqual(
        [ids(q.failures[0]!.events), q.failures[0]!.error, q.failures[0]!.attempts, q.failures[0]!.publishedReplyIds],
        [[ev.id], "still broken", 3, ["a".repeat(64)]],
      );
      assert.equal((await q.backend.event(ev.id))?.state, "failed");
      assert.deepEqual(q.batches, []);
      await q.close();
    });

    t("a failure a retry cannot fix ends at once, with the notice", async (p) => {
      const q = await p.open();
      await q.scheduler.accept(fromWire(mention(owner, "x")), CHANNEL);
      const b = await q.next();
      assert.equal(q.scheduler.fail(b.turnId, "refused", { retry: false }), "failed");
      await q.idle();
      assert.equal(q.failures.length, 1);
      await q.close();
    });

    t("!cancel ends waiting and running work in the scope; the slot stays taken until the agent side reports the end", async (p) => {
      const q = await p.open({ sessionScope: "channel", maxConcurrent: 1 });
      const a = fromWire(mention(owner, "a", { created_at: 10 }));
      const b = fromWire(mention(owner, "b", { created_at: 11 }));
      await q.scheduler.accept(a, CHANNEL);
      const running = await q.next();
      await q.scheduler.accept(b, CHANNEL);
      assert.deepEqual(await q.scheduler.cancel({ channel: CHANNEL }), { runningTurnIds: [running.turnId], ended: 2 });
      assert.equal((await q.backend.event(a.id))?.state, "cancelled");
      assert.equal((await q.backend.event(b.id))?.state, "cancelled");
      assert.equal(q.scheduler.runningTurn(running.scope.key), undefined, "nothing joins a cancelled turn");
      await q.scheduler.accept(fromWire(mention(owner, "c", { created_at: 12 })), CHANNEL);
      await q.idle();
      assert.deepEqual(q.batches, [], "the agent is still stopping the cancelled turn");
      assert.equal(q.scheduler.fail(running.turnId, "cancelled"), "ignored");
      assert.equal((await q.next()).events[0]!.content, "c");
      assert.equal((await q.backend.turn(running.turnId))?.state, "cancelled", "the agent side's end does not undo the cancel");
      assert.deepEqual(await q.scheduler.cancel({ channel: OTHER }), { runningTurnIds: [], ended: 0 });
      await q.close();
    });

    t("a channel-wide !cancel in thread scope ends every thread's work in that channel and nothing elsewhere", async (p) => {
      const q = await p.open({ sessionScope: "thread", maxConcurrent: 1 });
      const a = fromWire(mention(owner, "thread a", { created_at: 10 }));
      const b = fromWire(mention(owner, "thread b", { created_at: 11 }));
      const elsewhere = fromWire(mention(owner, "other channel", { created_at: 12, channel: OTHER }));
      await q.scheduler.accept(a, CHANNEL);
      const running = await q.next();
      await q.scheduler.accept(b, CHANNEL);
      await q.scheduler.accept(elsewhere, OTHER);
      assert.deepEqual(await q.scheduler.cancel({ channel: CHANNEL }), { runningTurnIds: [running.turnId], ended: 2 });
      assert.equal((await q.backend.event(a.id))?.state, "cancelled");
      assert.equal((await q.backend.event(b.id))?.state, "cancelled");
      assert.equal((await q.backend.event(elsewhere.id))?.state, "waiting", "another channel's mention still waits");
      await q.close();
    });

    t("a batch prepared but not yet taken whose work is cancelled is never handed out; its slot goes to the next mention", async (p) => {
      const q = await p.open({ pull: true, maxConcurrent: 1 });
      const ev = fromWire(mention(owner, "cancel me before I start"));
      await q.scheduler.accept(ev, CHANNEL);
      await q.idle(); // prepared, waiting for the daemon to take it
      assert.equal((await q.scheduler.cancel({ channel: CHANNEL, thread: ev.id })).ended, 1);
      assert.equal(q.scheduler.next(), null, "not handed out");
      assert.equal((await q.backend.event(ev.id))?.state, "cancelled");
      const later = fromWire(mention(owner, "the next one"));
      await q.scheduler.accept(later, CHANNEL);
      assert.deepEqual(ids((await q.next()).events), [later.id]);
      await q.close();
    });

    t("!cancel in a thread names that thread's scope only", async (p) => {
      const q = await p.open({ maxConcurrent: 1 });
      const busy = fromWire(mention(owner, "busy"));
      await q.scheduler.accept(busy, CHANNEL);
      const running = await q.next();
      const t1 = fromWire(mention(owner, "t1"));
      const t2 = fromWire(mention(owner, "t2"));
      await q.scheduler.accept(t1, CHANNEL);
      await q.scheduler.accept(t2, CHANNEL);
      assert.equal((await q.scheduler.cancel({ channel: CHANNEL, thread: t1.id })).ended, 1);
      q.scheduler.complete(running.turnId);
      assert.deepEqual(ids((await q.next()).events), [t2.id]);
      await q.idle();
      assert.deepEqual(q.batches, []);
      await q.close();
    });

    t(
      "a mid-turn message joins the running turn durably (a restart runs the turn again with it, once); handed back, it waits for a turn of its own",
      async (p) => {
        const q = await p.open();
        const top = fromWire(mention(owner, "start", { created_at: 100 }));
        await q.scheduler.accept(top, CHANNEL);
        const turn = await q.next();
        const steer = inThread(top.id, "also this", 101);
        const later = inThread(top.id, "and this", 102);
        await q.scheduler.accept(steer, CHANNEL);
        await q.scheduler.accept(later, CHANNEL);
        assert.equal(q.scheduler.runningTurn(turn.scope.key), turn.turnId);
        q.scheduler.recordReply(turn.turnId, "f".repeat(64));
        let delivered = 0;
        q.scheduler.joinRunning(turn.turnId, steer.id, () => ++delivered > 0);
        q.scheduler.joinRunning(turn.turnId, steer.id, () => ++delivered > 0); // heard again
        await q.idle();
        assert.equal(delivered, 1, "given to the agent once");
        const joined = await q.backend.event(steer.id);
        assert.deepEqual([joined?.state, joined?.turn_id, joined?.joined_after], ["in_turn", turn.turnId, 1], "after the one reply");
        assert.deepEqual((await q.backend.turn(turn.turnId))?.trigger_ids, [top.id, steer.id]);

        // The turn could not take it after all: it waits again, then runs with the other one.
        q.scheduler.leaveRunning(turn.turnId, [steer.id]);
        await q.idle();
        const left = await q.backend.event(steer.id);
        assert.deepEqual([left?.state, left?.turn_id, left?.joined_after], ["waiting", null, null]);
        q.scheduler.complete(turn.turnId);
        assert.deepEqual(ids((await q.next()).events), [steer.id, later.id]);
        assert.equal((await q.backend.event(top.id))?.state, "done");
        await q.close();
      },
    );

    t(
      "a restart resumes a turn left running once, with the replies the relay has and the steered message that still needs an answer",
      async (p) => {
        const relayHas = new Set(["a".repeat(64)]);
        const q1 = await p.open({ relayHas });
        const top = fromWire(mention(owner, "question", { created_at: 100 }));
        await q1.scheduler.accept(top, CHANNEL);
        const first = await q1.next();
        await q1.scheduler.recordBeforePublish(first.turnId, "a".repeat(64)); // published: the relay has it
        const steer = inThread(top.id, "and one more thing", 101);
        await q1.scheduler.accept(steer, CHANNEL);
        q1.scheduler.joinRunning(first.turnId, steer.id, () => true);
        await q1.scheduler.recordBeforePublish(first.turnId, "b".repeat(64)); // recorded, never sent
        await q1.idle();
        await q1.die();

        const q2 = await p.open({ relayHas });
        const resumed = await q2.next();
        assert.deepEqual(
          [resumed.turnId, resumed.attempt, resumed.recovered, resumed.publishedReplyIds],
          [first.turnId, 2, true, ["a".repeat(64)]],
        );
        assert.deepEqual(ids(resumed.events), [top.id, steer.id], "the steered message with its turn, not queued twice");
        assert.deepEqual(ids(resumed.unansweredJoins), [steer.id], "joined after the last reply the relay has");
        assert.ok(q2.lines.some((l) => l.evt === "queue.turn_resumed"));
        assert.equal(q2.lines.filter((l) => l.evt === "queue.recovered").length, 1, "the open work is reported once");
        assert.equal(q2.scheduler.complete(resumed.turnId), true);
        await q2.idle();
        assert.deepEqual(q2.batches, [], "nothing else to run");
        assert.equal((await q2.backend.event(steer.id))?.state, "done");
        await q2.close();
      },
    );

    t("a turn left running by every attempt gives up with one failure notice instead of running again", async (p) => {
      let q = await p.open({ maxAttempts: 2 });
      const ev = fromWire(mention(owner, "crashes the daemon"));
      await q.scheduler.accept(ev, CHANNEL);
      await q.next();
      await q.die();
      q = await p.open({ maxAttempts: 2 });
      assert.equal((await q.next()).attempt, 2);
      await q.die();
      q = await p.open({ maxAttempts: 2 });
      // On PostgreSQL after the lease the crashed daemon left behind (900 ms here).
      await waitFor(() => q.failures.length > 0, { what: "the failure notice" });
      await q.idle();
      assert.deepEqual(q.batches, []);
      assert.equal(q.failures.length, 1, "one notice");
      assert.deepEqual(ids(q.failures[0]!.events), [ev.id]);
      assert.equal((await q.backend.event(ev.id))?.state, "failed");
      await q.close();
    });

    t("its author deletes a waiting message: it gets no turn; a running turn is cancelled alone", async (p) => {
      const q = await p.open();
      const a = fromWire(mention(owner, "a", { created_at: 100 }));
      await q.scheduler.accept(a, CHANNEL);
      const turn = await q.next();
      const b = inThread(a.id, "b", 101);
      await q.scheduler.accept(b, CHANNEL);
      assert.equal(await q.scheduler.dropWaiting(b.id), true);
      assert.equal(await q.scheduler.dropWaiting(b.id), false, "once");
      assert.equal((await q.backend.event(b.id))?.state, "deleted");
      assert.equal(await q.scheduler.dropWaiting(a.id), false, "in a turn: not waiting");
      assert.equal(await q.scheduler.cancelRunning(turn.turnId, "deleted"), true);
      assert.equal(await q.scheduler.cancelRunning(turn.turnId, "again"), false, "once");
      assert.equal((await q.backend.turn(turn.turnId))?.state, "cancelled");
      assert.equal(q.scheduler.runningTurn(turn.scope.key), undefined, "nothing more joins a cancelled turn");
      assert.equal(q.scheduler.complete(turn.turnId), true);
      await q.idle();
      assert.equal((await q.backend.turn(turn.turnId))?.state, "cancelled", "the agent reporting its end does not undo the cancel");
      assert.deepEqual(q.batches, [], "nothing left to run");
      await q.close();
    });

    t("an edit replaces a message's text until an agent has it: waiting or in a queued retry, not running or answered", async (p) => {
      const q = await p.open({ backoff: { baseMs: 60_000, factor: 1, maxMs: 60_000 }, maxConcurrent: 1 });
      const { logger, lines } = captureLogger();
      const amend = new Amendments({
        store: q.backend,
        scheduler: q.scheduler,
        cancelTurns: () => undefined,
        retract: () => undefined,
        midTurn: () => undefined,
        ownReactions: async () => [],
        out: { publish: async () => null, signal: () => undefined },
        logger,
      });
      const busy = fromWire(mention(owner, "busy", { created_at: 100 }));
      await q.scheduler.accept(busy, CHANNEL);
      const running = await q.next();
      const edit = (target: Event, text: string) => fromWire(mention(owner, text, { kind: KIND.edit, tags: [["e", target.id]] }));
      await amend.edit(edit(busy, "too late"), busy.id, CHANNEL, "steer");
      assert.equal((await q.backend.event(busy.id))?.event.content, "busy", "its turn runs: not rewritten");

      const ev = fromWire(mention(owner, "deploy to production", { created_at: 101 }));
      await q.scheduler.accept(ev, CHANNEL);
      const e1 = edit(ev, "deploy to staging");
      await amend.edit(e1, ev.id, CHANNEL, "steer");
      const edited = (await q.backend.event(ev.id))!.event as Event & { edited?: string };
      assert.deepEqual([edited.content, edited.edited, edited.id, edited.created_at], ["deploy to staging", e1.id, ev.id, ev.created_at]);
      q.scheduler.complete(running.turnId);
      const b = await q.next();
      assert.deepEqual(
        b.events.map((e) => e.content),
        ["deploy to staging"],
        "the turn sees the corrected text",
      );
      q.scheduler.fail(b.turnId, "agent crashed");
      await q.idle();
      await amend.edit(edit(ev, "deploy to qa"), ev.id, CHANNEL, "steer");
      assert.equal((await q.backend.event(ev.id))?.event.content, "deploy to qa", "a retry not yet started takes the edit");
      assert.equal(lines.filter((l) => l.evt === "queue.edited").length, 2);
      await q.close();
    });

    t("once-only claims: a control command once; 🔒 once per window; 👀 once per mention", async (p) => {
      const q = await p.open();
      const b = q.backend;
      const at = Math.floor(Date.now() / 1000);
      assert.equal(await b.claimControl("c".repeat(64), at), true);
      assert.equal(await b.claimControl("c".repeat(64), at), false);
      assert.equal(await b.claimOnce("denied:a:b", 60_000), true);
      assert.equal(await b.claimOnce("denied:a:b", 60_000), false);
      assert.equal(await b.claimOnce("denied:a:c", 60_000), true, "another key is independent");
      assert.equal(await b.claimOnce("denied:a:b", 0), true, "a window that has passed allows it again");
      assert.deepEqual(await b.claimFirst(["seen:1", "seen:2"]), ["seen:1", "seen:2"]);
      assert.deepEqual(await b.claimFirst(["seen:2", "seen:3", "seen:3"]), ["seen:3"]);
      await q.close();
      const again = await p.open();
      assert.deepEqual(await again.backend.claimFirst(["seen:1", "seen:4"]), ["seen:4"], "durable across a restart");
      assert.equal(await again.backend.claimControl("c".repeat(64), at), false);
      await again.close();
    });

    t("the conversations the agent is in: the latest activity wins, kept across a restart", async (p) => {
      const q = await p.open();
      const b = q.backend;
      // Recent times (unix ms): retention forgets claims older than a week.
      const t0 = Date.now() - 600_000;
      await b.markActive("thread:r1", t0 + 5_000);
      await b.markActive("thread:r1", t0 + 3_000); // an older time (a rebuild from the relay) never goes back
      await b.markActive("channel:c1", t0 + 4_000);
      await b.markActive("thread:old", t0 + 1_000);
      assert.equal(await b.claimOnce("thread:r2", 60_000), true, "a claim of that name is not a conversation");
      await q.close();
      // This daemon after a restart, or another daemon of the fleet.
      const again = await p.open();
      assert.deepEqual(await again.backend.activeSince(t0 + 2_000), [
        { key: "channel:c1", at: t0 + 4_000 },
        { key: "thread:r1", at: t0 + 5_000 },
      ]);
      await again.backend.markActive("thread:r1", t0 + 9_000);
      assert.deepEqual(await again.backend.activeSince(t0 + 6_000), [{ key: "thread:r1", at: t0 + 9_000 }]);
      await again.close();
    });

    t("retention removes finished rows past their keep time, never open work", async (p) => {
      const q = await p.open();
      const done = fromWire(mention(owner, "done"));
      const pending = fromWire(mention(owner, "open", { tags: [["e", done.id, "", "reply"]] }));
      await q.scheduler.accept(done, CHANNEL);
      const b = await q.next();
      await q.scheduler.accept(pending, CHANNEL);
      q.scheduler.complete(b.turnId);
      const next = await q.next();
      await q.backend.prune(1000, Date.now() + 10_000);
      assert.equal(await q.backend.event(done.id), undefined);
      assert.equal(await q.backend.turn(b.turnId), undefined);
      assert.equal((await q.backend.event(pending.id))?.state, "in_turn");
      assert.equal((await q.backend.turn(next.turnId))?.state, "running");
      await q.close();
    });

    t("!rotate: whoever runs the scope next ends its session first, once per rotate", async (p) => {
      const q: Queue = await p.open();
      const root = fromWire(mention(owner, "first"));
      await q.scheduler.accept(root, CHANNEL);
      const first = await q.next();
      q.scheduler.complete(first.turnId);
      await q.idle();
      await q.scheduler.rotate(first.scope.key);
      await q.scheduler.accept(inThread(root.id, "after the rotate"), CHANNEL);
      const second = await q.next();
      assert.equal(second.scope.key, first.scope.key);
      assert.deepEqual(q.rotated, [first.scope.key], "rotated before the batch was handed out");
      q.scheduler.complete(second.turnId);
      await q.scheduler.accept(inThread(root.id, "and again"), CHANNEL);
      await q.next();
      assert.deepEqual(q.rotated, [first.scope.key], "once per rotate, not every turn");
      await q.close();
    });
  });
}
