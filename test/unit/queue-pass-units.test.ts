/**
 * The scheduler's pass and the SQLite backend's once-only claims, on a real SQLite file in
 * a temp dir: a pass claims scopes only while slots are free and never counts a running
 * scope against them, starts nothing while the daemon stops, wakes the pump only for a
 * ready batch and lets go of scopes that got none; a claimed scope whose events ended in
 * between starts no turn (or records its turn cancelled), and a retry not yet due waits.
 * On a shared backend (SQLite made to look shared) leases are renewed once per third of a
 * lease period and a takeover is logged. The backend's claims: none for no free slot, the
 * next retry's due time, and accepted / denied marks that hold once and across a restart.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import { Scheduler, type Batch, type SchedulerOptions } from "../../src/queue/scheduler.js";
import { SqliteStore } from "../../src/queue/sqlite-store.js";
import type { Claims, ScopeWork } from "../../src/queue/backend.js";
import { owner, teammate, CHANNEL, mention, fromWire, tempDir, captureLogger } from "../../kit/queue-helpers.js";
import { place } from "../fixtures/queue-harness.js";
import { waitFor } from "../../kit/wait.js";

const tmp = tempDir("bb-queue-pass-");
after(() => tmp.cleanup());

let dirs = 0;
const freshDir = () => `${tmp.dir}/s${++dirs}`;
const ids = (evs: Event[]) => evs.map((e) => e.id);
const inThread = (root: string, text: string, at?: number) =>
  fromWire(mention(teammate, text, { tags: [["e", root, "", "reply"]], created_at: at }));
const keyOf = (ev: Event) => `${CHANNEL}/${ev.id}`;

/** A scheduler over `backend` as the daemon wires it, its batches pumped into `batches`. */
async function schedule(backend: SqliteStore, o: Partial<SchedulerOptions> = {}) {
  const { logger, lines } = captureLogger();
  const batches: Batch[] = [];
  const s: Scheduler = new Scheduler({
    backend,
    daemon: { id: "solo", host: "test", pid: process.pid, maxConcurrent: 4 },
    logger,
    sessionScope: "thread",
    maxConcurrent: 4,
    pollMs: 50,
    backoff: { baseMs: 200, factor: 1, maxMs: 200 },
    confirmPublished: async (x) => x,
    ...o,
  });
  s.on("ready", () => {
    for (let b = s.next(); b; b = s.next()) batches.push(b);
  });
  await s.start();
  return { s, batches, lines };
}

/**
 * The SQLite store as a shared backend (leases that expire), with what the scheduler asks of
 * the leases counted: claims, renewals and releases. `from` marks claims as taken over.
 */
function sharedStore(store: SqliteStore, leaseMs: number, from: string | null = null) {
  /** renewsAtClaim: per pass, the renewals so far when it claimed. */
  const seen = { claims: 0, renews: 0, renewsAtClaim: [] as number[], released: [] as string[] };
  const b = Object.create(store) as SqliteStore;
  Object.defineProperty(b, "leaseMs", { value: leaseMs });
  b.claim = async (holder, limit, busy): Promise<Claims> => {
    seen.claims++;
    seen.renewsAtClaim.push(seen.renews);
    const c = await store.claim(holder, limit, busy);
    return { ...c, scopes: c.scopes.map((x) => ({ ...x, from })) };
  };
  b.renew = async (_d, held) => {
    seen.renews++;
    return [...held];
  };
  b.release = async (_h, key) => void seen.released.push(key);
  return { b, seen };
}

// ── The pass ─────────────────────────────────────────────────────────────────────────

test("a running scope with new arrivals does not take the only free slot: another scope's mention starts at once", async () => {
  const q = await (await place("sqlite", { dir: tmp.dir })).open({ maxConcurrent: 2 });
  const a = fromWire(mention(owner, "a", { created_at: 100 }));
  await q.scheduler.accept(a, CHANNEL);
  const first = await q.next();
  assert.deepEqual([first.attempt, first.recovered, first.publishedReplyIds, first.unansweredJoins], [1, false, [], []]);
  // The running scope has the oldest waiting work: it must not be claimed in the one free slot.
  await q.scheduler.accept(inThread(a.id, "more on a", 101), CHANNEL);
  await q.idle();
  assert.equal(q.batches.length, 0, "a's next turn waits for its running one");
  const b = fromWire(mention(owner, "b", { created_at: 200 }));
  await q.scheduler.accept(b, CHANNEL);
  await q.idle();
  assert.deepEqual(
    q.batches.map((x) => ids(x.events)),
    [[b.id]],
    "b runs beside a's turn",
  );
  await q.close();
});

test("the pump is woken only when a batch is ready", async () => {
  const wakes: (Batch | null)[] = [];
  const q = await (await place("sqlite", { dir: tmp.dir })).open({ pull: true });
  q.scheduler.on("ready", () => wakes.push(q.scheduler.next()));
  const a = fromWire(mention(owner, "a", { created_at: 100 }));
  await q.scheduler.accept(a, CHANNEL);
  await q.idle();
  // Arrivals in the busy scope: passes that prepare nothing.
  await q.scheduler.accept(inThread(a.id, "one", 101), CHANNEL);
  await q.scheduler.accept(inThread(a.id, "two", 102), CHANNEL);
  await q.idle();
  assert.deepEqual(
    wakes.map((b) => b && ids(b.events)),
    [[a.id]],
  );
  await q.close();
});

test("a daemon that stops claiming starts no new turn: an accepted mention stays waiting", async () => {
  const q = await (await place("sqlite", { dir: tmp.dir })).open();
  q.scheduler.stopClaiming();
  const ev = fromWire(mention(owner, "too late"));
  assert.equal(await q.scheduler.accept(ev, CHANNEL), true);
  await q.idle();
  assert.deepEqual(q.batches, []);
  assert.equal((await q.backend.event(ev.id))?.state, "waiting", "kept for the next start");
  await q.close();
});

test("a single daemon resuming its own turn after a restart reports no takeover", async () => {
  const p = await place("sqlite", { dir: tmp.dir });
  const q1 = await p.open();
  const ev = fromWire(mention(owner, "hello"));
  await q1.scheduler.accept(ev, CHANNEL);
  const first = await q1.next();
  await q1.die();
  const q2 = await p.open();
  const resumed = await q2.next();
  assert.deepEqual([resumed.turnId, resumed.attempt, resumed.recovered], [first.turnId, 2, true]);
  assert.deepEqual(
    q2.lines.filter((l) => l.evt === "queue.scope_taken_over"),
    [],
  );
  await q2.close();
});

// ── Prepare: the races between a claim and the turn's start ─────────────────────────────

test("a mention deleted between the scope's read and its turn's start: the turn is recorded cancelled and nothing runs", async () => {
  const q = await (await place("sqlite", { dir: tmp.dir })).open();
  const backend = q.backend as SqliteStore;
  const scopeWork = backend.scopeWork.bind(backend);
  const startTurn = backend.startTurn.bind(backend);
  const started: number[] = [];
  let race = true;
  backend.scopeWork = async (scope, n): Promise<ScopeWork> => {
    const w = await scopeWork(scope, n);
    // Its author deletes it right after the read (or another daemon's `!cancel` ends it).
    if (race) for (const id of w.waiting) await backend.dropWaiting(id);
    return w;
  };
  backend.startTurn = async (...a) => {
    const id = await startTurn(...a);
    started.push(id);
    return id;
  };
  const gone = fromWire(mention(owner, "deleted at once"));
  await q.scheduler.accept(gone, CHANNEL);
  await q.idle();
  assert.deepEqual(q.batches, [], "no empty batch is handed out");
  assert.equal(started.length, 1);
  const t = await backend.turn(started[0]!);
  assert.deepEqual([t?.state, t?.attempts, t?.recovered, t?.error], ["cancelled", 1, false, "its events ended before it started"]);
  assert.equal((await backend.event(gone.id))?.state, "deleted");
  // The slot was not kept: the next mention runs.
  race = false;
  const next = fromWire(mention(owner, "next"));
  await q.scheduler.accept(next, CHANNEL);
  assert.deepEqual(ids((await q.next()).events), [next.id]);
  await q.close();
});

test("a claimed scope whose mentions ended before its work was read starts no turn", async () => {
  const q = await (await place("sqlite", { dir: tmp.dir })).open();
  const backend = q.backend as SqliteStore;
  const scopeWork = backend.scopeWork.bind(backend);
  const startTurn = backend.startTurn.bind(backend);
  const started: number[] = [];
  const ev = fromWire(mention(owner, "deleted before the read"));
  backend.scopeWork = async (scope, n) => {
    await backend.dropWaiting(ev.id);
    return scopeWork(scope, n);
  };
  backend.startTurn = async (...a) => {
    const id = await startTurn(...a);
    started.push(id);
    return id;
  };
  await q.scheduler.accept(ev, CHANNEL);
  await q.idle();
  assert.deepEqual(q.batches, []);
  assert.deepEqual(started, [], "no turn recorded");
  await q.close();
});

test("a retry written in a race with the scope's claim waits until it is due", async () => {
  let now = 1_000_000;
  const store = SqliteStore.open(freshDir(), { now: () => now });
  const claim = store.claim.bind(store);
  const { s, batches } = await schedule(store);
  const ev = fromWire(mention(owner, "hello"));
  // The claim takes the scope; its turn's failure, with a retry in a while, lands right after.
  store.claim = async (holder, limit, busy) => {
    const c = await claim(holder, limit, busy);
    for (const x of c.scopes) {
      const turnId = await store.startTurn(x.key, x.channel, [ev.id]);
      await store.updateTurn(
        "running",
        { id: turnId, state: "queued", attempts: 1, recovered: false, error: "x", retryInMs: 60_000 },
        "solo",
      );
    }
    store.claim = claim;
    return c;
  };
  await s.accept(ev, CHANNEL);
  await s.idle();
  assert.equal(batches.length, 0, "not due yet");
  now += 60_000;
  // The next pass (here: another mention's) finds it due.
  const other = fromWire(mention(owner, "other"));
  await s.accept(other, CHANNEL);
  await s.idle();
  assert.deepEqual(
    batches.map((b) => [ids(b.events), b.attempt]).sort(),
    [
      [[ev.id], 2],
      [[other.id], 1],
    ].sort(),
  );
  await s.close();
  await store.close();
});

// ── On a shared backend ──────────────────────────────────────────────────────────────

test("on a shared backend the first pass renews the leases, and the passes after it within a third of a lease period do not", async () => {
  const store = SqliteStore.open(freshDir());
  const { b, seen } = sharedStore(store, 60_000);
  const { s } = await schedule(b);
  await waitFor(() => seen.claims >= 5, { what: "five passes" });
  assert.deepEqual(seen.renewsAtClaim.slice(0, 5), [1, 1, 1, 1, 1]);
  await s.close();
  await store.close();
});

test("on a shared backend whose lease lasts three poll periods every pass renews the leases", async () => {
  const store = SqliteStore.open(freshDir());
  // A third of the lease is one poll period: each pass is due to renew.
  const { b, seen } = sharedStore(store, 150);
  const { s } = await schedule(b);
  await waitFor(() => seen.claims >= 5, { what: "five passes" });
  assert.deepEqual(seen.renewsAtClaim.slice(0, 5), [1, 2, 3, 4, 5]);
  await s.close();
  await store.close();
});

test("on a shared backend a scope is held while its turn runs and let go once it has no more work", async () => {
  const store = SqliteStore.open(freshDir());
  const { b, seen } = sharedStore(store, 60_000);
  const { s, batches } = await schedule(b);
  const ev = fromWire(mention(owner, "hello"));
  await s.accept(ev, CHANNEL);
  const batch = await waitFor(() => batches.shift(), { what: "a batch" });
  assert.deepEqual(s.fleetStatus()?.scopes, [keyOf(ev)]);
  assert.deepEqual(seen.released, []);
  s.complete(batch.turnId);
  await waitFor(() => seen.released.length > 0, { what: "the release" });
  assert.deepEqual(seen.released, [keyOf(ev)]);
  assert.deepEqual(s.fleetStatus()?.scopes, []);
  await s.close();
  await store.close();
});

test("a scope taken over from a daemon that stopped is logged with that daemon", async () => {
  const store = SqliteStore.open(freshDir());
  const ev = fromWire(mention(owner, "left running"));
  // Another daemon accepted it and started its turn, then stopped.
  await store.accept(ev, CHANNEL, keyOf(ev), { scope: 500 });
  await store.startTurn(keyOf(ev), CHANNEL, [ev.id]);
  const { b } = sharedStore(store, 60_000, "daemon-gone");
  const { s, batches, lines } = await schedule(b);
  const resumed = await waitFor(() => batches[0], { what: "the resumed turn" });
  assert.deepEqual([ids(resumed.events), resumed.recovered], [[ev.id], true]);
  assert.deepEqual(
    lines.filter((l) => l.evt === "queue.scope_taken_over").map((l) => [l.scope, l.from]),
    [[keyOf(ev), "daemon-gone"]],
  );
  await s.close();
  await store.close();
});

// ── The SQLite backend's claims ─────────────────────────────────────────────────────

test("SQLite: a claim with no free slot takes no scope, however much work waits", async () => {
  const store = SqliteStore.open(freshDir());
  for (const text of ["a", "b"]) {
    const ev = fromWire(mention(owner, text));
    await store.accept(ev, CHANNEL, keyOf(ev), { scope: 500 });
  }
  assert.deepEqual((await store.claim("solo", 0, [])).scopes, []);
  assert.deepEqual((await store.claim("solo", -1, [])).scopes, []);
  assert.equal((await store.claim("solo", 1, [])).scopes.length, 1);
  await store.close();
});

test("SQLite: a claim leaves out a scope whose retry is not due and says when it is", async () => {
  let now = 1_000_000;
  const store = SqliteStore.open(freshDir(), { now: () => now });
  const ev = fromWire(mention(owner, "retry me"));
  await store.accept(ev, CHANNEL, keyOf(ev), { scope: 500 });
  const turnId = await store.startTurn(keyOf(ev), CHANNEL, [ev.id]);
  await store.updateTurn("running", { id: turnId, state: "queued", attempts: 1, recovered: false, error: "x", retryInMs: 5_000 }, "solo");
  assert.deepEqual(await store.claim("solo", 4, []), { scopes: [], nextDueInMs: 5_000 });
  now += 2_000;
  assert.deepEqual(await store.claim("solo", 4, []), { scopes: [], nextDueInMs: 3_000 });
  now += 3_000;
  assert.deepEqual(await store.claim("solo", 4, []), { scopes: [{ key: keyOf(ev), channel: CHANNEL, from: null }] });
  await store.close();
});

test("SQLite: an event counts as accepted once marked or stored, and only that event", async () => {
  const dir = freshDir();
  const store = SqliteStore.open(dir);
  const marked = fromWire(mention(owner, "marked"));
  const stored = fromWire(mention(owner, "stored"));
  const other = fromWire(mention(owner, "never seen"));
  assert.equal(store.isAccepted(marked.id), false);
  store.markAccepted(marked.id);
  await store.accept(stored, CHANNEL, keyOf(stored), { scope: 500 });
  assert.deepEqual([store.isAccepted(marked.id), store.isAccepted(stored.id), store.isAccepted(other.id)], [true, true, false]);
  await store.close();
  const again = SqliteStore.open(dir);
  assert.equal(again.isAccepted(marked.id), true, "across a restart");
  await again.close();
});

test("SQLite: a denial is reported once per event, also after a restart", async () => {
  const dir = freshDir();
  const store = SqliteStore.open(dir);
  assert.equal(store.markDenied("e1"), true);
  assert.equal(store.markDenied("e1"), false, "a relay replay");
  assert.equal(store.markDenied("e2"), true, "another event");
  store.markAccepted("e3");
  assert.equal(store.markDenied("e3"), true, "an accepted mark is not a denial");
  await store.close();
  const again = SqliteStore.open(dir);
  assert.equal(again.markDenied("e1"), false);
  assert.equal(again.isAccepted("e1"), false, "a denial is not an acceptance");
  await again.close();
});
