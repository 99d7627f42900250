/**
 * The scheduler's once-only paths one at a time, over the real SQLite backend (the queue
 * harness): what storedEvent keeps; a mid-turn join handed to the agent once, or not at all
 * when its turn ends first; a cancel another daemon's `!cancel` beat; the final failure's
 * log line and a notice that cannot be posted; `!cancel` in channel mode and its log line;
 * the depth after a deletion; the total cap, counted from half full; stopClaiming; idle;
 * fleetStatus; and a stop: batches never started go back as they were, a notice on its way
 * is still posted, and a stopped queue reads nothing more from its closed store; a cancel
 * written here while a renewal asks which turns ended elsewhere never taken for another
 * daemon's. The contract (queue-state-store.test.ts) covers the same paths end to end on
 * both backends.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import { owner, teammate, CHANNEL, mention, fromWire, tempDir, captureLogger } from "../../kit/queue-helpers.js";
import { join } from "node:path";
import { place, type Queue, type QueueOptions } from "../fixtures/queue-harness.js";
import { Scheduler, type Batch } from "../../src/queue/scheduler.js";
import { SqliteStore } from "../../src/queue/sqlite-store.js";
import { sleep, waitFor } from "../../kit/wait.js";

const tmp = tempDir("bb-queue-units-");
after(() => tmp.cleanup());

const ids = (evs: Event[]) => evs.map((e) => e.id);
const inThread = (root: string, text: string, at?: number) =>
  fromWire(mention(teammate, text, { tags: [["e", root, "", "reply"]], created_at: at }));
const linesOf = (q: Queue, evt: string) => q.lines.filter((l) => l.evt === evt);

async function fresh(o?: QueueOptions) {
  const p = await place("sqlite", { dir: tmp.dir });
  return { p, q: await p.open(o) };
}

/**
 * A scheduler of its own over a SQLite file in `dir`, stopped from claiming before it starts:
 * it runs no pass, so nothing but currentDepth() re-reads its figures.
 */
async function frozenFigures(dir: string, totalCap: number) {
  const backend = SqliteStore.open(dir);
  const { logger } = captureLogger();
  const scheduler = new Scheduler({
    backend,
    daemon: { id: "frozen", host: "test", pid: process.pid, maxConcurrent: 4 },
    logger,
    sessionScope: "thread",
    maxConcurrent: 4,
    totalCap,
    confirmPublished: async (x) => x,
  });
  scheduler.stopClaiming();
  await scheduler.start();
  return { backend, scheduler };
}

test("storedEvent keeps an accepted event's id, author, tags and time, but not its text", async () => {
  const { q } = await fresh();
  const ev = fromWire(mention(owner, "a long question about the deploy"));
  await q.scheduler.accept(ev, CHANNEL);
  assert.deepEqual(q.scheduler.storedEvent(ev.id), { ...ev, content: "" });
  await q.close();
});

test("a waiting message joins the running turn and is handed to the agent once; it then ends with that turn", async () => {
  const { q } = await fresh();
  const top = fromWire(mention(owner, "start", { created_at: 100 }));
  await q.scheduler.accept(top, CHANNEL);
  const turn = await q.next();
  const steer = inThread(top.id, "also this", 101);
  await q.scheduler.accept(steer, CHANNEL);
  let delivered = 0;
  q.scheduler.joinRunning(turn.turnId, steer.id, () => {
    delivered++;
    return true;
  });
  await q.idle();
  assert.equal(delivered, 1);
  const joined = await q.backend.event(steer.id);
  assert.deepEqual([joined?.state, joined?.turn_id], ["in_turn", turn.turnId]);
  assert.equal(q.scheduler.complete(turn.turnId), true);
  await q.idle();
  assert.deepEqual(q.batches, [], "no second turn for the joined message");
  assert.equal((await q.backend.event(steer.id))?.state, "done");
  await q.close();
});

test("a turn whose row another daemon's !cancel already ended cannot be cancelled here again", async () => {
  const { q } = await fresh();
  await q.scheduler.accept(fromWire(mention(owner, "work")), CHANNEL);
  const turn = await q.next();
  // As another daemon's `!cancel` does: the store's row ends first.
  await q.backend.cancelScopes(CHANNEL, undefined);
  assert.equal(await q.scheduler.cancelRunning(turn.turnId, "its message was deleted"), false);
  assert.equal(q.scheduler.runningTurn(turn.scope.key), turn.turnId, "still running here until the agent side reports its end");
  await q.close();
});

test("a turn that fails for good logs queue.turn_failed with its turn, scope, attempts and error, and posts one notice", async () => {
  const { q } = await fresh();
  const ev = fromWire(mention(owner, "do it"));
  await q.scheduler.accept(ev, CHANNEL);
  const turn = await q.next();
  assert.equal(q.scheduler.fail(turn.turnId, "agent crashed", { retry: false }), "failed");
  await q.idle();
  const [line, ...more] = linesOf(q, "queue.turn_failed");
  assert.deepEqual(more, []);
  assert.deepEqual([line?.turn, line?.scope, line?.attempts, line?.error], [turn.turnId, `${CHANNEL}/${ev.id}`, 1, "agent crashed"]);
  assert.deepEqual(
    q.failures.map((f) => [f.turnId, ids(f.events), f.error, f.attempts]),
    [[turn.turnId, [ev.id], "agent crashed", 1]],
  );
  await q.close();
});

test("a failure notice that cannot be posted is logged with the turn it was for", async () => {
  const { q } = await fresh();
  q.scheduler.on("failed", () => {
    throw new Error("relay unreachable");
  });
  await q.scheduler.accept(fromWire(mention(owner, "do it")), CHANNEL);
  const turn = await q.next();
  q.scheduler.fail(turn.turnId, "agent crashed", { retry: false });
  await q.idle();
  const failed = linesOf(q, "queue.store_write_failed");
  assert.deepEqual(
    failed.map((l) => [l.what, l.err]),
    [[`failure notice of turn ${turn.turnId}`, "relay unreachable"]],
  );
  await q.close();
});

test("in channel mode a !cancel given in a thread still ends the channel's running turn", async () => {
  const { q } = await fresh({ sessionScope: "channel" });
  const ev = fromWire(mention(owner, "work"));
  await q.scheduler.accept(ev, CHANNEL);
  const turn = await q.next();
  const r = await q.scheduler.cancel({ channel: CHANNEL, thread: ev.id });
  assert.deepEqual(r, { runningTurnIds: [turn.turnId], ended: 1 });
  assert.equal((await q.backend.turn(turn.turnId))?.state, "cancelled");
  await q.close();
});

test("a !cancel that ends work logs queue.cancelled with the channel, the thread (null at top level), the count and the running turns; one that ends nothing logs nothing", async () => {
  const { q } = await fresh();
  const top = fromWire(mention(owner, "work", { created_at: 100 }));
  await q.scheduler.accept(top, CHANNEL);
  const turn = await q.next();
  await q.scheduler.accept(inThread(top.id, "more", 101), CHANNEL);
  await q.idle();
  assert.deepEqual(await q.scheduler.cancel({ channel: CHANNEL }), { runningTurnIds: [turn.turnId], ended: 2 });
  assert.deepEqual(
    linesOf(q, "queue.cancelled").map((l) => [l.channel, l.thread, l.ended, l.running]),
    [[CHANNEL, null, 2, [turn.turnId]]],
  );
  assert.deepEqual(await q.scheduler.cancel({ channel: CHANNEL }), { runningTurnIds: [], ended: 0 });
  assert.equal(linesOf(q, "queue.cancelled").length, 1, "nothing ended: no line");
  await q.close();
});

test("the queue depth counts a waiting event its author deleted no more", async () => {
  const { q } = await fresh();
  const top = fromWire(mention(owner, "work", { created_at: 100 }));
  await q.scheduler.accept(top, CHANNEL);
  await q.next();
  const a = inThread(top.id, "one", 101);
  const b = inThread(top.id, "two", 102);
  await q.scheduler.accept(a, CHANNEL);
  await q.scheduler.accept(b, CHANNEL);
  await waitFor(() => q.scheduler.depth().queued === 2, { what: "two waiting" });
  assert.equal(await q.scheduler.dropWaiting(a.id), true);
  await waitFor(() => q.scheduler.depth().queued === 1, { what: "the deletion in the depth" });
  await q.close();
});

test("after stopClaiming a new arrival is stored but starts no turn, while the running turn still ends", async () => {
  const { q } = await fresh();
  const first = fromWire(mention(owner, "first"));
  await q.scheduler.accept(first, CHANNEL);
  const turn = await q.next();
  q.scheduler.stopClaiming();
  const second = fromWire(mention(owner, "second"));
  assert.equal(await q.scheduler.accept(second, CHANNEL), true);
  await q.idle();
  assert.deepEqual(q.batches, [], "nothing new starts");
  assert.equal((await q.backend.event(second.id))?.state, "waiting");
  assert.equal(q.scheduler.complete(turn.turnId), true);
  await q.idle();
  assert.equal((await q.backend.event(first.id))?.state, "done");
  assert.deepEqual(q.batches, []);
  await q.close();
});

test("a batch prepared but never handed out goes back at a stop: the next start runs it as a first attempt, not a recovery", async () => {
  const { p, q } = await fresh({ pull: true });
  const ev = fromWire(mention(owner, "work"));
  await q.scheduler.accept(ev, CHANNEL);
  await q.idle();
  assert.equal(q.scheduler.depth().inFlight, 1, "prepared");
  await q.close();
  const q2 = await p.open();
  const b = await q2.next();
  assert.deepEqual([ids(b.events), b.attempt, b.recovered], [[ev.id], 1, false]);
  await q2.close();
});

test("a crash with a batch prepared but not handed out logs the failed hand-back; the next start resumes it as a recovered attempt", async () => {
  const { p, q } = await fresh({ pull: true });
  const ev = fromWire(mention(owner, "work"));
  await q.scheduler.accept(ev, CHANNEL);
  await q.idle();
  assert.equal(q.scheduler.depth().inFlight, 1, "prepared");
  await q.die();
  const failed = linesOf(q, "queue.store_write_failed");
  assert.equal(failed.length, 1);
  assert.match(String(failed[0]?.what), /^turn \d+$/);
  const q2 = await p.open();
  const b = await q2.next();
  assert.deepEqual([ids(b.events), b.attempt, b.recovered], [[ev.id], 2, true]);
  await q2.close();
});

test("a failure notice on its way when the daemon stops is posted before the stop completes", async () => {
  const { q } = await fresh();
  const ev = fromWire(mention(owner, "do it"));
  await q.scheduler.accept(ev, CHANNEL);
  const turn = await q.next();
  q.scheduler.fail(turn.turnId, "agent crashed", { retry: false });
  await q.close();
  assert.deepEqual(
    q.failures.map((f) => [f.turnId, ids(f.events)]),
    [[turn.turnId, [ev.id]]],
  );
});

test("idle resolves only once a turn's end has led to the scope's next batch", async () => {
  const { q } = await fresh();
  const top = fromWire(mention(owner, "start", { created_at: 100 }));
  await q.scheduler.accept(top, CHANNEL);
  const turn = await q.next();
  const more = inThread(top.id, "more", 101);
  await q.scheduler.accept(more, CHANNEL);
  await q.idle();
  assert.equal(q.batches.length, 0, "the scope is busy");
  q.scheduler.complete(turn.turnId);
  await q.idle();
  assert.deepEqual(
    q.batches.map((b) => ids(b.events)),
    [[more.id]],
  );
  await q.close();
});

test("a queue stopped while its figures are due reads nothing more from its closed store", async () => {
  const { q } = await fresh();
  const top = fromWire(mention(owner, "work", { created_at: 100 }));
  await q.scheduler.accept(top, CHANNEL);
  await q.next();
  await q.scheduler.accept(inThread(top.id, "one", 101), CHANNEL);
  await waitFor(() => q.scheduler.depth().queued === 1, { what: "the figures read" });
  // A change now: the figures are due again within 200 ms, and the queue stops before that.
  await q.scheduler.accept(inThread(top.id, "two", 102), CHANNEL);
  await q.idle();
  await q.close();
  // To show that nothing happens later: past the figures' 200 ms.
  await sleep(400);
  assert.deepEqual(
    q.lines.filter((l) => ["warn", "error", "fatal"].includes(String(l.level))),
    [],
  );
});

test("a queue stopped as a turn ends reads nothing more from its closed store after that end is written", async () => {
  const { q } = await fresh();
  const top = fromWire(mention(owner, "work", { created_at: 100 }));
  await q.scheduler.accept(top, CHANNEL);
  const turn = await q.next();
  await q.scheduler.accept(inThread(top.id, "one", 101), CHANNEL);
  await waitFor(() => q.scheduler.depth().queued === 1, { what: "the figures read" });
  q.scheduler.complete(turn.turnId);
  await q.close();
  // To show that nothing happens later: past the figures' 200 ms.
  await sleep(400);
  assert.deepEqual(
    q.lines.filter((l) => ["warn", "error", "fatal"].includes(String(l.level))),
    [],
  );
});

test("on SQLite there is no fleet to report", async () => {
  const { q } = await fresh();
  assert.equal(q.scheduler.fleetStatus(), undefined);
  await q.close();
});

test("the total cap is counted once this daemon's figures reach half of it: its own accepts count, a replay does not, others' arrivals from the next figures", async () => {
  const dir = join(tmp.dir, "frozen");
  const { backend, scheduler } = await frozenFigures(dir, 4);
  const own = (text: string) => fromWire(mention(owner, text));
  const f0 = own("mine");
  assert.equal(await scheduler.accept(f0, CHANNEL), true);
  assert.equal((await scheduler.currentDepth()).queued, 1);
  // Another daemon stores three more: the queue is at its cap of 4, which these figures do not know yet.
  const others = [own("a"), own("b"), own("c")];
  for (const e of others) await backend.accept(e, CHANNEL, scheduler.scopeOf(e, CHANNEL).key, { scope: 500 });
  assert.equal(await scheduler.accept(others[0]!, CHANNEL), false, "a replay of theirs");
  // 1 known below half of 4: not counted, so it is taken.
  const f1 = own("taken");
  assert.equal(await scheduler.accept(f1, CHANNEL), true);
  assert.equal((await backend.event(f1.id))?.state, "waiting");
  // 2 known, half of 4: the whole queue is counted now, and it is over the cap.
  const f2 = own("refused");
  assert.equal(await scheduler.accept(f2, CHANNEL), true);
  assert.equal((await backend.event(f2.id))?.state, "refused");
  await scheduler.close();
  await backend.close();
});

test("a message joining a turn that ends before the join is written is not handed to the agent; it runs in the next turn", async () => {
  const { q } = await fresh();
  const top = fromWire(mention(owner, "start", { created_at: 100 }));
  await q.scheduler.accept(top, CHANNEL);
  const turn = await q.next();
  const steer = inThread(top.id, "also this", 101);
  await q.scheduler.accept(steer, CHANNEL);
  let delivered = 0;
  q.scheduler.joinRunning(turn.turnId, steer.id, () => {
    delivered++;
    return true;
  });
  // The agent side reports the end while the join is on its way to the store.
  assert.equal(q.scheduler.complete(turn.turnId), true);
  const next = await q.next();
  assert.equal(delivered, 0);
  assert.deepEqual(ids(next.events), [steer.id]);
  assert.equal((await q.backend.event(top.id))?.state, "done");
  await q.close();
});

test("a rotated scope's batch dropped before it was handed out (`!cancel`) leaves the rotation to the scope's next batch", async () => {
  const { q } = await fresh({ pull: true });
  const top = fromWire(mention(owner, "start", { created_at: 100 }));
  await q.scheduler.accept(top, CHANNEL);
  const first = await q.next();
  q.scheduler.complete(first.turnId);
  await q.idle();
  await q.scheduler.rotate(first.scope.key);
  await q.scheduler.accept(inThread(top.id, "cancelled before it runs", 101), CHANNEL);
  await q.idle();
  // Prepared, marked rotated, not yet taken: the owner cancels the thread's work.
  await q.scheduler.cancel({ channel: CHANNEL, thread: top.id });
  assert.equal(q.scheduler.next(), null);
  const after = inThread(top.id, "after the cancel", 102);
  await q.scheduler.accept(after, CHANNEL);
  const next = await q.next();
  assert.deepEqual(ids(next.events), [after.id]);
  assert.deepEqual(q.rotated, [first.scope.key], "the session still ends before the scope's next turn here, once");
  await q.close();
});

/** A started scheduler "fleet-1" over `backend`, every batch it hands out collected in `batches`. */
async function collecting(backend: SqliteStore, pollMs: number) {
  const { logger } = captureLogger();
  const batches: Batch[] = [];
  const scheduler: Scheduler = new Scheduler({
    backend,
    daemon: { id: "fleet-1", host: "test", pid: process.pid, maxConcurrent: 4 },
    logger,
    sessionScope: "thread",
    maxConcurrent: 4,
    pollMs,
    confirmPublished: async (x) => x,
  });
  scheduler.on("ready", () => {
    for (let b = scheduler.next(); b; b = scheduler.next()) batches.push(b);
  });
  await scheduler.start();
  return { scheduler, batches };
}

test("on a shared queue fleetStatus names this daemon, the scopes it holds and the waiting count", async () => {
  // The SQLite file with a finite lease period stands in for a fleet's shared store here.
  const store = SqliteStore.open(join(tmp.dir, "shared"));
  const backend = Object.create(store, { leaseMs: { value: 60_000 } }) as SqliteStore;
  const { scheduler, batches } = await collecting(backend, 60_000);
  const top = fromWire(mention(owner, "work", { created_at: 100 }));
  await scheduler.accept(top, CHANNEL);
  await scheduler.idle();
  assert.deepEqual(
    batches.map((b) => ids(b.events)),
    [[top.id]],
  );
  await scheduler.accept(inThread(top.id, "more", 101), CHANNEL);
  await scheduler.idle();
  await scheduler.currentDepth();
  assert.deepEqual(scheduler.fleetStatus(), { daemon: "fleet-1", leases: 1, scopes: [`${CHANNEL}/${top.id}`], queued: 1 });
  await scheduler.close();
  await store.close();
});

test("a stop whose leases cannot be handed back (the shared store gone) logs queue.fleet_leave_failed with the error and still completes", async () => {
  const store = SqliteStore.open(join(tmp.dir, "leave"));
  // As a fleet's database that went away just as the daemon stops.
  const backend = Object.create(store, {
    leaseMs: { value: 60_000 },
    leave: { value: async () => Promise.reject(new Error("connection terminated")) },
  }) as SqliteStore;
  const { logger, lines } = captureLogger();
  const scheduler = new Scheduler({
    backend,
    daemon: { id: "fleet-2", host: "test", pid: process.pid, maxConcurrent: 4 },
    logger,
    sessionScope: "thread",
    maxConcurrent: 4,
    pollMs: 60_000,
    confirmPublished: async (x) => x,
  });
  await scheduler.start();
  await scheduler.close();
  assert.deepEqual(
    lines.filter((l) => l.evt === "queue.fleet_leave_failed").map((l) => [l.level, l.err]),
    [["warn", "connection terminated"]],
  );
  await store.close();
});

/** A promise and the function that settles it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { opened, open };
}

for (const via of ["its trigger deleted", "!cancel"] as const) {
  test(`a cancel here (${via}) written while a renewal asks which running turns ended elsewhere is not taken for another daemon's: the turn ends here, once`, async () => {
    // The SQLite file with a finite lease period stands in for a fleet's shared store, whose
    // answers a loaded database server gives late: a renewal's question is held until the
    // cancel's write is in the store, and that write's answer until the renewal has gone on.
    const store = SqliteStore.open(join(tmp.dir, `cancel-during-renewal-${via === "!cancel" ? "command" : "deleted"}`));
    let asking: ReturnType<typeof gate> | undefined;
    let answering: ReturnType<typeof gate> | undefined;
    let writing: ReturnType<typeof gate> | undefined;
    let asked = 0;
    const heldWrite =
      <A extends unknown[], R>(write: (...a: A) => Promise<R>) =>
      async (...a: A): Promise<R> => {
        const written = await write.apply(store, a);
        await writing?.opened;
        return written;
      };
    const backend = Object.create(store, {
      leaseMs: { value: 300 },
      notRunning: {
        value: async (turnIds: number[]) => {
          asked++;
          if (asking && turnIds.length) {
            asking.open();
            asking = undefined;
            await answering!.opened;
          }
          return store.notRunning(turnIds);
        },
      },
      updateTurn: { value: heldWrite(store.updateTurn) },
      cancelScopes: { value: heldWrite(store.cancelScopes) },
    }) as SqliteStore;
    const { scheduler, batches } = await collecting(backend, 20);
    const lost: number[] = [];
    scheduler.on("lost", (turnIds) => lost.push(...turnIds));
    const top = fromWire(mention(owner, "work", { created_at: 100 }));
    await scheduler.accept(top, CHANNEL);
    const turn = await waitFor(() => batches[0], { what: "the turn" });

    asking = gate();
    answering = gate();
    const renewalAsks = asking.opened;
    await renewalAsks;
    writing = gate();
    const cancelled =
      via === "!cancel"
        ? scheduler.cancel({ channel: CHANNEL, thread: top.id }).then((c) => c.runningTurnIds)
        : scheduler.cancelRunning(turn.turnId, "deleted");
    answering.open();
    // The renewal has gone on once the next one asks (renewals run one after the other).
    const after = asked;
    await waitFor(() => asked > after, { what: "the next renewal" });
    writing.open();
    assert.deepEqual(await cancelled, via === "!cancel" ? [turn.turnId] : true, "cancelled here, to be stopped at the agent here");
    assert.deepEqual(lost, [], "not stopped as if another daemon had ended it");
    assert.equal(scheduler.complete(turn.turnId), true, "its end reported by the agent side is taken");
    await scheduler.close();
    await store.close();
  });
}
