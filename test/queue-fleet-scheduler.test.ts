/**
 * The scheduler between the daemons of a fleet, on a real PostgreSQL server: a turn whose daemon
 * died is resumed by another exactly once, and what the dead daemon had already
 * published (as the relay confirms) is not published again; the owner's `!cancel` given
 * to one daemon stops the turn another daemon runs; the database lost mid-turn delays the
 * turn's writes without running it again; the scope cap holds across the fleet; a `!rotate`
 * through another daemon ends this one's session; a mid-turn message joins the holder's
 * running turn once, or waits for the next turn when that one can no longer take it.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import type { PostgresStore } from "../src/queue/pg-store.js";
import { owner, CHANNEL, mention, fromWire, tempDir } from "../kit/queue-helpers.js";
import { usePostgres } from "../kit/postgres.js";
import { place, type Queue, type QueueOptions } from "./fixtures/queue-harness.js";
import { sleep, waitFor } from "../kit/wait.js";

const pg = usePostgres();
const tmp = tempDir("bb-fleet-sched-");
after(() => tmp.cleanup());

/** The fleet's daemons on one database: each its own connection pool and scheduler, leases of 900 ms. */
type Fleet = (o?: QueueOptions) => Promise<Queue>;

const holds = (n: Queue, daemon: string, key: string) => (n.backend as PostgresStore).leases.holds(daemon, key);

const t = (name: string, fn: (fleet: Fleet) => Promise<void>, o: { leaseMs?: number } = {}) =>
  test(name, { timeout: 30_000 }, async (ctx) => {
    if (pg.skip) return ctx.skip(pg.skip);
    const p = await place("postgres", { dir: tmp.dir, pg: pg.server, leaseMs: o.leaseMs ?? 900 });
    await fn((q) => p.open(q));
  });

t("a turn whose daemon died is resumed once by another; a reply the relay has counts as published", async (fleet) => {
  const relayHas = new Set<string>();
  const a = await fleet({ relayHas });
  const ev = fromWire(mention(owner, "question"));
  assert.equal(await a.scheduler.accept(ev, CHANNEL), true);
  const first = await a.next();
  assert.deepEqual(
    first.events.map((e) => e.id),
    [ev.id],
  );
  await a.scheduler.recordBeforePublish(first.turnId, "a".repeat(64)); // recorded before publishing; the relay stored it
  relayHas.add("a".repeat(64));
  await a.die();

  const b = await fleet({ relayHas });
  const resumed = await b.next();
  assert.equal(resumed.turnId, first.turnId);
  assert.equal(resumed.recovered, true);
  assert.equal(resumed.attempt, 2);
  assert.deepEqual(resumed.publishedReplyIds, ["a".repeat(64)], "the dead daemon's reply is known: not answered again");
  assert.ok(b.lines.some((l) => l.evt === "queue.scope_taken_over" && l.from === a.id));
  assert.equal(b.scheduler.complete(resumed.turnId), true);
  await b.idle();
  assert.equal((await b.backend.event(ev.id))?.state, "done");
  await sleep(300); // a batch run again would show up by now (the loop polls every 50 ms)
  assert.deepEqual(b.batches, [], "nothing else to run");
  await b.close();
});

t("a reply recorded but never published (the daemon died in between) does not count: the turn runs again", async (fleet) => {
  const relayHas = new Set<string>();
  const a = await fleet({ relayHas });
  await a.scheduler.accept(fromWire(mention(owner, "question")), CHANNEL);
  const first = await a.next();
  await a.scheduler.recordBeforePublish(first.turnId, "b".repeat(64));
  await a.die();
  const b = await fleet({ relayHas });
  const resumed = await b.next();
  assert.equal(resumed.turnId, first.turnId);
  assert.deepEqual(resumed.publishedReplyIds, [], "the relay never got it");
  await b.close();
});

t("!cancel given to one daemon stops the turn another daemon runs", async (fleet) => {
  const a = await fleet();
  const b = await fleet();
  const ev = fromWire(mention(owner, "long job"));
  await a.scheduler.accept(ev, CHANNEL);
  await waitFor(() => a.batches.length + b.batches.length > 0, { timeoutMs: 8000, intervalMs: 50, what: "a batch on either daemon" });
  const [holder, other] = a.batches.length ? [a, b] : [b, a];
  const running = await holder.next();
  assert.equal(await holds(holder, holder.id, running.scope.key), true);
  const r = await other.scheduler.cancel({ channel: CHANNEL, thread: ev.id });
  assert.equal(r.ended, 1);
  assert.deepEqual(r.runningTurnIds, [], "not running on the daemon that was told");
  await waitFor(() => holder.lost.includes(running.turnId), {
    timeoutMs: 5000,
    intervalMs: 50,
    what: "the holder to stop the cancelled turn",
  });
  assert.deepEqual(holder.lost, [running.turnId], "the holder stops it");
  assert.equal(holder.scheduler.complete(running.turnId), false, "its late end changes nothing");
  assert.equal((await a.backend.event(ev.id))?.state, "cancelled");
  for (const n of [a, b]) await n.close();
});

t(
  "the database lost during a turn: the reply's record and the turn's end wait for it; the turn is not run again",
  async (fleet) => {
    const a = await fleet();
    const ev = fromWire(mention(owner, "during an outage"));
    await a.scheduler.accept(ev, CHANNEL);
    const batch = await a.next();
    let gone!: () => void;
    const stopped = new Promise<void>((r) => (gone = r));
    const down = pg.server!.restart(1500, { onDown: gone });
    await stopped; // the server is down: what follows happens during the outage
    a.scheduler.recordReply(batch.turnId, "c".repeat(64));
    assert.equal(a.scheduler.complete(batch.turnId), true);
    await down;
    const done = async () => (await a.backend.event(ev.id).catch(() => undefined))?.state === "done";
    await waitFor(done, { timeoutMs: 10_000, intervalMs: 100, what: "the turn's end written once the database is back" });
    assert.deepEqual((await a.backend.turn(batch.turnId))?.reply_ids, ["c".repeat(64)]);
    assert.ok(
      a.lines.some((l) => l.evt === "queue.store_write_retry"),
      "the writes waited for the database",
    );
    await sleep(500); // a resumed batch would show up by now
    assert.deepEqual(a.batches, [], "not resumed as if left running");
    assert.deepEqual(a.lost, [], "the lease outlived the outage");
    await a.close();
  },
  { leaseMs: 6000 },
);

t("the scope cap holds across the fleet: past it the oldest waiting mentions are refused once, with one notice", async (fleet) => {
  // No free slots anywhere, so everything waits.
  const a = await fleet({ maxConcurrent: 0, scopeCap: 3 });
  const b = await fleet({ maxConcurrent: 0, scopeCap: 3 });
  const root = fromWire(mention(owner, "root", { created_at: 5000 }));
  const replies = [1, 2, 3, 4].map((i) => fromWire(mention(owner, `r${i}`, { created_at: 5000 + i, tags: [["e", root.id, "", "root"]] })));
  // Every daemon hears every event, in its own order.
  for (const ev of [root, ...replies]) await Promise.all([a.scheduler.accept(ev, CHANNEL), b.scheduler.accept(ev, CHANNEL)]);
  await waitFor(() => a.refusals.length + b.refusals.length, { what: "the refusal notice" });
  await Promise.all([a.close(), b.close()]); // announces whatever is pending
  const refused = [...a.refusals, ...b.refusals].flatMap((r) => r.events.map((e) => e.id));
  assert.deepEqual(refused.sort(), [root.id, replies[0]!.id].sort(), "the two oldest, each once");
  assert.equal(
    [...a.refusals, ...b.refusals].every((r) => r.reason === "scope-cap" && r.scope === `${CHANNEL}/${root.id}`),
    true,
  );
});

t("!rotate executed by another daemon: this daemon ends its session of the scope before its next turn there", async (fleet) => {
  const a = await fleet();
  const root = fromWire(mention(owner, "first"));
  await a.scheduler.accept(root, CHANNEL);
  const first = await a.next();
  assert.equal(a.scheduler.complete(first.turnId), true);
  await a.idle();
  assert.deepEqual(a.rotated, [], "the first turn opened the session; nothing to rotate");
  // Another daemon of the fleet executed `!rotate` in the thread.
  const other = await fleet();
  await other.scheduler.rotate(first.scope.key);
  await other.close();
  await a.scheduler.accept(fromWire(mention(owner, "after the rotate", { tags: [["e", root.id, "", "root"]] })), CHANNEL);
  const second = await a.next();
  assert.equal(second.scope.key, first.scope.key);
  assert.deepEqual(a.rotated, [first.scope.key], "rotated before the batch was handed out");
  await a.close();
});

t(
  "a mid-turn message another daemon stored joins the holder's running turn once; one the turn can no longer take waits for its next turn",
  async (fleet) => {
    const a = await fleet();
    const b = await fleet();
    await a.scheduler.accept(fromWire(mention(owner, "long job")), CHANNEL);
    await waitFor(() => a.batches.length + b.batches.length > 0, { timeoutMs: 8000, intervalMs: 50, what: "a batch on either daemon" });
    const [holder, other] = a.batches.length ? [a, b] : [b, a];
    const running = await holder.next();
    const scope = running.scope;
    assert.equal(other.scheduler.runningTurn(scope.key), undefined, "only the holder finds the turn running");
    assert.equal(holder.scheduler.runningTurn(scope.key), running.turnId);

    const steer = fromWire(mention(owner, "also this"));
    assert.equal(await other.scheduler.accept(steer, CHANNEL, scope), true);
    assert.equal(await holder.scheduler.accept(steer, CHANNEL, scope), false, "heard by both, stored once");
    let delivered = 0;
    holder.scheduler.joinRunning(running.turnId, steer.id, () => ++delivered > 0);
    holder.scheduler.joinRunning(running.turnId, steer.id, () => ++delivered > 0); // the same message heard again
    await holder.idle();
    assert.equal((await holder.backend.event(steer.id))?.state, "in_turn");
    // The turn ends while this join is written: the agent can no longer take it.
    const late = fromWire(mention(owner, "as the turn ends"));
    await other.scheduler.accept(late, CHANNEL, scope);
    holder.scheduler.joinRunning(running.turnId, late.id, () => false);
    assert.equal(holder.scheduler.complete(running.turnId), true);

    const nextTurn = await holder.next();
    assert.deepEqual(
      nextTurn.events.map((e) => e.id),
      [late.id],
      "the late one has a turn of its own",
    );
    assert.equal(delivered, 1, "given to the agent once");
    const ended = await holder.backend.turn(running.turnId);
    assert.equal(ended?.state, "done");
    assert.deepEqual(ended?.trigger_ids, [running.events[0]!.id, steer.id]);
    assert.equal((await holder.backend.event(steer.id))?.state, "done");
    for (const n of [a, b]) await n.close();
  },
);
