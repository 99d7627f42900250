/**
 * The fleet scheduler between daemons, on a real PostgreSQL server: a turn whose daemon
 * died is resumed by another exactly once, and what the dead daemon had already
 * published (as the relay confirms) is not published again; the owner's `!cancel` given
 * to one daemon stops the turn another daemon runs; a failed turn is retried after its
 * backoff and gives up with one failure notice; a mid-turn message joins the holder's
 * running turn once, or waits for the next turn when that one can no longer take it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { FleetScheduler } from "../src/queue/fleet-scheduler.js";
import { PostgresStore } from "../src/queue/pg-store.js";
import type { Batch, FinalFailure } from "../src/queue/scheduler.js";
import type { Refusal } from "../src/queue/refusals.js";
import { agent, owner, CHANNEL, mention, fromWire, captureLogger } from "./fixtures/queue-helpers.js";
import { usePostgres } from "./fixtures/postgres.js";
import { sleep, waitFor } from "./fixtures/wait.js";

const pg = usePostgres();

interface Node {
  id: string;
  store: PostgresStore;
  s: FleetScheduler;
  batches: Batch[];
  lost: number[];
  failures: FinalFailure[];
  refusals: Refusal[];
  rotated: string[];
  next(timeoutMs?: number): Promise<Batch>;
}

/** One daemon's queue: its own connection pool and scheduler, fast lease timings. */
async function node(
  url: string,
  id: string,
  relayHas: Set<string>,
  o: { leaseMs?: number; maxAttempts?: number; maxConcurrent?: number; scopeCap?: number } = {},
): Promise<Node> {
  const store = await PostgresStore.open({ url, identity: agent.pk });
  const batches: Batch[] = [];
  const lost: number[] = [];
  const failures: FinalFailure[] = [];
  const refusals: Refusal[] = [];
  const rotated: string[] = [];
  const s: FleetScheduler = new FleetScheduler({
    store,
    daemon: { id, host: "test", pid: process.pid, maxConcurrent: o.maxConcurrent ?? 2 },
    logger: captureLogger().logger,
    sessionScope: "thread",
    maxConcurrent: o.maxConcurrent ?? 2,
    ...(o.scopeCap !== undefined ? { scopeCap: o.scopeCap } : {}),
    maxAttempts: o.maxAttempts ?? 3,
    backoff: { baseMs: 200, factor: 1, maxMs: 200 },
    leaseMs: o.leaseMs ?? 900,
    pollMs: 50,
    confirmPublished: async (ids) => ids.filter((x) => relayHas.has(x)),
    onWake: () => {
      for (let b = s.next(); b; b = s.next()) batches.push(b);
    },
    onLost: (ids) => lost.push(...ids),
    onFinalFailure: (f) => failures.push(f),
    onRefused: (r) => refusals.push(r),
    onRotate: async (key) => void rotated.push(key),
  });
  const next = (timeoutMs = 8000) => waitFor(() => batches.shift(), { timeoutMs, intervalMs: 10, what: `${id}: a batch` });
  s.recover();
  return { id, store, s, batches, lost, failures, refusals, rotated, next };
}

/** The daemon dies: its database connections are gone and it renews nothing any more. */
async function die(n: Node): Promise<void> {
  await n.store.close();
  await n.s.close(); // its leave() fails too: the leases stay until they expire
}

const t = (name: string, fn: (url: string) => Promise<void>) =>
  test(name, { timeout: 30_000 }, async (ctx) => {
    if (pg.skip) return ctx.skip(pg.skip);
    await fn(await pg.server!.createDatabase());
  });

t("a turn whose daemon died is resumed once by another; a reply the relay has counts as published", async (url) => {
  const relayHas = new Set<string>();
  const a = await node(url, "A", relayHas);
  const ev = fromWire(mention(owner, "question"));
  assert.equal(await a.s.accept(ev, CHANNEL), true);
  const first = await a.next();
  assert.deepEqual(
    first.events.map((e) => e.id),
    [ev.id],
  );
  a.s.recordReply(first.turnId, "a".repeat(64)); // recorded before publishing; the relay stored it
  relayHas.add("a".repeat(64));
  await waitFor(async () => (await a.store.turn(first.turnId))?.reply_ids.length, { what: "the reply recorded in the database" });
  await die(a);

  const b = await node(url, "B", relayHas);
  const resumed = await b.next();
  assert.equal(resumed.turnId, first.turnId);
  assert.equal(resumed.recovered, true);
  assert.equal(resumed.attempt, 2);
  assert.deepEqual(resumed.publishedReplyIds, ["a".repeat(64)], "the dead daemon's reply is known: not answered again");
  assert.equal(b.s.complete(resumed.turnId), true);
  await sleep(300); // the end is written in the background, and a batch run again would show up by now
  assert.equal((await b.store.event(ev.id))?.state, "done");
  assert.deepEqual(b.batches, [], "nothing else to run");
  await b.s.close();
  await b.store.close();
});

t("a reply recorded but never published (the daemon died in between) does not count: the turn runs again", async (url) => {
  const relayHas = new Set<string>();
  const a = await node(url, "A", relayHas);
  await a.s.accept(fromWire(mention(owner, "question")), CHANNEL);
  const first = await a.next();
  a.s.recordReply(first.turnId, "b".repeat(64));
  await waitFor(async () => (await a.store.turn(first.turnId))?.reply_ids.length, { what: "the reply recorded in the database" });
  await die(a);
  const b = await node(url, "B", relayHas);
  const resumed = await b.next();
  assert.equal(resumed.turnId, first.turnId);
  assert.deepEqual(resumed.publishedReplyIds, [], "the relay never got it");
  await b.s.close();
  await b.store.close();
});

t("!cancel given to one daemon stops the turn another daemon runs", async (url) => {
  const relayHas = new Set<string>();
  const a = await node(url, "A", relayHas);
  const b = await node(url, "B", relayHas);
  const ev = fromWire(mention(owner, "long job"));
  await a.s.accept(ev, CHANNEL);
  await waitFor(() => a.batches.length + b.batches.length > 0, { timeoutMs: 8000, intervalMs: 50, what: "a batch on either daemon" });
  const [holder, other] = a.batches.length ? [a, b] : [b, a];
  const running = await holder.next();
  assert.equal(await holder.store.leases.holds(holder.id, running.scope.key), true);
  const r = await other.s.cancel({ channel: CHANNEL, thread: ev.id });
  assert.equal(r.ended, 1);
  assert.deepEqual(r.runningTurnIds, [], "not running on the daemon that was told");
  await waitFor(() => holder.lost.includes(running.turnId), {
    timeoutMs: 5000,
    intervalMs: 50,
    what: "the holder to stop the cancelled turn",
  });
  assert.deepEqual(holder.lost, [running.turnId], "the holder stops it");
  assert.equal(holder.s.complete(running.turnId), false, "its late end changes nothing");
  assert.equal((await a.store.event(ev.id))?.state, "cancelled");
  for (const n of [a, b]) {
    await n.s.close();
    await n.store.close();
  }
});

t("a failed turn is retried after its backoff, then gives up with one failure notice", async (url) => {
  const a = await node(url, "A", new Set(), { maxAttempts: 2 });
  const ev = fromWire(mention(owner, "flaky"));
  await a.s.accept(ev, CHANNEL);
  const first = await a.next();
  assert.equal(a.s.fail(first.turnId, "agent crashed"), "retry");
  const second = await a.next();
  assert.equal(second.turnId, first.turnId);
  assert.equal(second.attempt, 2);
  assert.equal(a.s.fail(second.turnId, "agent crashed again"), "failed");
  await waitFor(() => a.failures.length > 0, { timeoutMs: 3000, intervalMs: 50, what: "the failure notice" });
  assert.equal(a.failures.length, 1);
  assert.deepEqual(
    a.failures[0]!.events.map((e) => e.id),
    [ev.id],
  );
  assert.equal((await a.store.event(ev.id))?.state, "failed");
  await a.s.close();
  await a.store.close();
});

t("the database lost during a turn: the reply's record and the turn's end wait for it; the turn is not run again", async (url) => {
  const a = await node(url, "A", new Set(), { leaseMs: 6000 });
  const ev = fromWire(mention(owner, "during an outage"));
  await a.s.accept(ev, CHANNEL);
  const batch = await a.next();
  let gone!: () => void;
  const stopped = new Promise<void>((r) => (gone = r));
  const down = pg.server!.restart(1500, { onDown: gone });
  await stopped; // the server is down: what follows happens during the outage
  a.s.recordReply(batch.turnId, "c".repeat(64));
  assert.equal(a.s.complete(batch.turnId), true);
  await down;
  const done = async () => (await a.store.event(ev.id).catch(() => undefined))?.state === "done";
  await waitFor(done, { timeoutMs: 10_000, intervalMs: 100, what: "the turn's end written once the database is back" });
  assert.equal((await a.store.event(ev.id))?.state, "done");
  assert.deepEqual((await a.store.turn(batch.turnId))?.reply_ids, ["c".repeat(64)]);
  await sleep(500); // a resumed batch would show up by now
  assert.deepEqual(a.batches, [], "not resumed as if left running");
  assert.deepEqual(a.lost, [], "the lease outlived the outage");
  await a.s.close();
  await a.store.close();
});

t("the scope cap holds across the fleet: past it the oldest waiting mentions are refused once, with one notice", async (url) => {
  const relayHas = new Set<string>();
  // No free slots anywhere, so everything waits.
  const a = await node(url, "A", relayHas, { maxConcurrent: 0, scopeCap: 3 });
  const b = await node(url, "B", relayHas, { maxConcurrent: 0, scopeCap: 3 });
  const root = fromWire(mention(owner, "root", { created_at: 5000 }));
  const replies = [1, 2, 3, 4].map((i) => fromWire(mention(owner, `r${i}`, { created_at: 5000 + i, tags: [["e", root.id, "", "root"]] })));
  // Every daemon hears every event, in its own order.
  for (const ev of [root, ...replies]) await Promise.all([a.s.accept(ev, CHANNEL), b.s.accept(ev, CHANNEL)]);
  await sleep(100); // a refusal counted twice (one per daemon) would show up by now
  const refused = [...a.refusals, ...b.refusals].flatMap((r) => r.events.map((e) => e.id));
  assert.deepEqual(refused.sort(), [root.id, replies[0]!.id].sort(), "the two oldest, each once");
  assert.equal(
    [...a.refusals, ...b.refusals].every((r) => r.reason === "scope-cap" && r.scope === `${CHANNEL}/${root.id}`),
    true,
  );
  assert.equal((await a.store.event(root.id))?.state, "refused");
  assert.deepEqual(
    (await a.store.waitingEvents()).map((e) => e.id),
    replies.slice(1).map((e) => e.id),
  );
  for (const n of [a, b]) {
    await n.s.close();
    await n.store.close();
  }
});

t("!rotate executed by another daemon: this daemon ends its session of the scope before its next turn there", async (url) => {
  const a = await node(url, "A", new Set());
  const root = fromWire(mention(owner, "first"));
  await a.s.accept(root, CHANNEL);
  const first = await a.next();
  assert.equal(a.s.complete(first.turnId), true);
  await sleep(300); // a rotation wrongly run would show up by now
  assert.deepEqual(a.rotated, [], "the first turn opened the session; nothing to rotate");
  // Another daemon of the fleet executed `!rotate` in the thread.
  const other = await PostgresStore.open({ url, identity: agent.pk });
  await other.bumpRotation(first.scope.key);
  await other.close();
  await a.s.accept(fromWire(mention(owner, "after the rotate", { tags: [["e", root.id, "", "root"]] })), CHANNEL);
  const second = await a.next();
  assert.equal(second.scope.key, first.scope.key);
  assert.deepEqual(a.rotated, [first.scope.key], "rotated before the batch was handed out");
  assert.equal(a.s.complete(second.turnId), true);
  await a.s.accept(fromWire(mention(owner, "and again", { tags: [["e", root.id, "", "root"]] })), CHANNEL);
  await a.next();
  assert.deepEqual(a.rotated, [first.scope.key], "once per rotate, not every turn");
  await a.s.close();
  await a.store.close();
});

t(
  "a mid-turn message another daemon stored joins the holder's running turn once; one the turn can no longer take waits for its next turn",
  async (url) => {
    const relayHas = new Set<string>();
    const a = await node(url, "A", relayHas);
    const b = await node(url, "B", relayHas);
    await a.s.accept(fromWire(mention(owner, "long job")), CHANNEL);
    await waitFor(() => a.batches.length + b.batches.length > 0, { timeoutMs: 8000, intervalMs: 50, what: "a batch on either daemon" });
    const [holder, other] = a.batches.length ? [a, b] : [b, a];
    const running = await holder.next();
    const scope = running.scope;
    assert.equal(other.s.runningTurn(scope.key), undefined, "only the holder finds the turn running");
    assert.equal(holder.s.runningTurn(scope.key), running.turnId);

    const steer = fromWire(mention(owner, "also this"));
    assert.equal(await other.s.accept(steer, CHANNEL, scope), true);
    assert.equal(await holder.s.accept(steer, CHANNEL, scope), false, "heard by both, stored once");
    let delivered = 0;
    holder.s.joinRunning(running.turnId, steer.id, () => ++delivered > 0);
    holder.s.joinRunning(running.turnId, steer.id, () => ++delivered > 0); // the same message heard again
    await waitFor(async () => (await holder.store.event(steer.id))?.state === "in_turn", {
      timeoutMs: 5000,
      what: "the mid-turn message to join the turn",
    });
    // The turn ends while this join is written: the agent can no longer take it.
    const late = fromWire(mention(owner, "as the turn ends"));
    await other.s.accept(late, CHANNEL, scope);
    holder.s.joinRunning(running.turnId, late.id, () => false);
    assert.equal(holder.s.complete(running.turnId), true);

    const nextTurn = await holder.next();
    assert.deepEqual(
      nextTurn.events.map((e) => e.id),
      [late.id],
      "the late one has a turn of its own",
    );
    assert.equal(delivered, 1, "given to the agent once");
    const ended = await holder.store.turn(running.turnId);
    assert.equal(ended?.state, "done");
    assert.deepEqual(ended?.trigger_ids, [running.events[0]!.id, steer.id]);
    assert.equal((await holder.store.event(steer.id))?.state, "done");
    for (const n of [a, b]) {
      await n.s.close();
      await n.store.close();
    }
  },
);

t(
  "a running turn whose only message was deleted ends cancelled; its scope starts nothing new until the agent side reports the end",
  async (url) => {
    const a = await node(url, "A", new Set());
    const first = fromWire(mention(owner, "doomed"));
    await a.s.accept(first, CHANNEL);
    const running = await a.next();
    const queued = fromWire(mention(owner, "next in the thread"));
    await a.s.accept(queued, CHANNEL, running.scope);
    assert.equal(await a.s.cancelRunning(running.turnId, "its message was deleted by its author"), true);
    assert.equal(await a.s.cancelRunning(running.turnId, "again"), false, "once");
    assert.equal((await a.store.turn(running.turnId))?.state, "cancelled");
    assert.equal((await a.store.event(first.id))?.state, "cancelled");
    assert.equal(a.s.runningTurn(running.scope.key), undefined, "nothing joins a cancelled turn");
    await sleep(400); // a batch started too early would show up by now (the loop polls every 50 ms)
    assert.deepEqual(a.batches, [], "the agent is still stopping the turn: the scope waits");
    assert.equal(a.s.complete(running.turnId), true);
    const next = await a.next();
    assert.deepEqual(
      next.events.map((e) => e.id),
      [queued.id],
    );
    assert.equal((await a.store.turn(running.turnId))?.state, "cancelled", "the agent side's end does not overwrite it");
    await a.s.close();
    await a.store.close();
  },
);
