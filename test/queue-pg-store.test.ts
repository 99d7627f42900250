/**
 * What only the PostgreSQL store has: several daemons on one database. Migrations run
 * once under an advisory lock however many daemons start together; the database is bound
 * to one identity; a newer schema is refused; an event heard by every daemon is stored
 * once; scope leases are exclusive, expire, are taken over and renewed, and fence the
 * old holder's writes after a takeover; the URL's
 * password never appears in an error. A real server, started by the test.
 */
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import { PostgresStore } from "../src/queue/pg-store.js";
import { PG_SCHEMA, PG_SCHEMA_VERSION } from "../src/queue/pg-migrations.js";
import { LeaseLostError, QueueStoreError } from "../src/queue/errors.js";
import { agent, owner, teammate, CHANNEL, mention, fromWire } from "../kit/queue-helpers.js";
import { usePostgres } from "../kit/postgres.js";
import { sleep } from "../kit/wait.js";

const db = usePostgres();

const t = (name: string, fn: (url: string) => Promise<void>) =>
  test(name, async (ctx) => {
    if (db.skip) return ctx.skip(db.skip);
    await fn(await db.server!.createDatabase());
  });

const open = (url: string, identity = agent.pk) => PostgresStore.open({ url, identity });
const CAPS = { scope: 500, total: 10_000 };
/** The keys of a claim. */
const claimed = async (c: Promise<{ scopes: Array<{ key: string; channel: string; from: string | null }> }>) => (await c).scopes;
/** The ids of a scope's waiting events, oldest first. */
const waiting = async (s: PostgresStore, scope: string) => (await s.scopeWork(scope, 50)).waiting;

async function sql(url: string, text: string, params: unknown[] = []) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text, params)).rows;
  } finally {
    await c.end();
  }
}

describe("PostgreSQL store: one database, several daemons", () => {
  t("three daemons starting at once migrate the schema once, to the latest version", async (url) => {
    const stores = await Promise.all([open(url), open(url), open(url)]);
    assert.equal(await stores[0]!.schemaVersion(), PG_SCHEMA_VERSION);
    const rows = await sql(url, `SELECT key, value FROM ${PG_SCHEMA}.meta ORDER BY key`);
    assert.deepEqual(rows, [
      { key: "identity", value: agent.pk },
      { key: "schema_version", value: String(PG_SCHEMA_VERSION) },
    ]);
    await Promise.all(stores.map((s) => s.close()));
  });

  t("a second identity is refused: the database belongs to the first", async (url) => {
    await (await open(url)).close();
    await assert.rejects(open(url, owner.pk), (err: unknown) => {
      assert.ok(err instanceof QueueStoreError);
      assert.match(err.message, /belongs to another agent identity/);
      assert.ok(err.message.includes(agent.pk) && err.message.includes(owner.pk), err.message);
      assert.ok(!err.message.includes(db.server!.password), "no password in the message");
      return true;
    });
  });

  t("a schema newer than the code is refused, naming both versions", async (url) => {
    await (await open(url)).close();
    await sql(url, `UPDATE ${PG_SCHEMA}.meta SET value = $1 WHERE key = 'schema_version'`, [String(PG_SCHEMA_VERSION + 1)]);
    await assert.rejects(open(url), (err: unknown) => {
      assert.ok(err instanceof QueueStoreError);
      assert.match(err.message, /newer buzz-bridge \(schema version \d+; this one understands up to \d+\)/);
      assert.ok(!err.message.includes(db.server!.password), "no password in the message");
      return true;
    });
  });

  t("an unreachable database is a clear error without the URL's password", async () => {
    const url = `postgres://bb:s3cret-pw@127.0.0.1:${db.server!.port + 1}/nothing`;
    await assert.rejects(PostgresStore.open({ url, identity: agent.pk, connectTimeoutMs: 2000 }), (err: unknown) => {
      assert.ok(err instanceof QueueStoreError);
      assert.match(err.message, /cannot use the PostgreSQL database postgres:\/\/bb:\[redacted\]@127\.0\.0\.1/);
      assert.ok(!err.message.includes("s3cret-pw"), err.message);
      return true;
    });
  });

  t("an event every daemon heard is accepted by exactly one of them", async (url) => {
    const stores = await Promise.all([open(url), open(url), open(url)]);
    const events = Array.from({ length: 20 }, (_, i) => fromWire(mention(i % 2 ? owner : teammate, `m${i}`)));
    let accepted = 0;
    await Promise.all(
      stores.flatMap((s) =>
        events.map(async (ev) => {
          if ((await s.accept(ev, CHANNEL, `${CHANNEL}/${ev.id}`, CAPS)).fresh) accepted++;
        }),
      ),
    );
    assert.equal(accepted, events.length);
    assert.equal((await stores[1]!.depth()).queued, events.length);
    assert.equal(await stores[2]!.leases.queueDepth(), events.length);
    await Promise.all(stores.map((s) => s.close()));
  });
});

describe("PostgreSQL store: scope leases", () => {
  async function withScopes(url: string, count: number) {
    const [a, b] = await Promise.all([open(url), open(url)]);
    const scopes: string[] = [];
    for (let i = 0; i < count; i++) {
      const ev = fromWire(mention(owner, `q${i}`, { created_at: 1000 + i }));
      const scope = `${CHANNEL}/${ev.id}`;
      await a!.accept(ev, CHANNEL, scope, CAPS);
      scopes.push(scope);
    }
    return { a: a!, b: b!, scopes };
  }

  t("two daemons claiming at once get disjoint scopes, oldest waiting first, none twice", async (url) => {
    const { a, b, scopes } = await withScopes(url, 6);
    const [ca, cb] = await Promise.all([claimed(a.leases.claim("A", 3, [], 30_000)), claimed(b.leases.claim("B", 3, [], 30_000))]);
    const all = [...ca!, ...cb!].map((c) => c.key);
    assert.equal(new Set(all).size, 6, "every scope claimed by exactly one daemon");
    assert.deepEqual(all.sort(), [...scopes].sort());
    assert.ok([...ca!, ...cb!].every((c) => c.from === null && c.channel === CHANNEL));
    // Each daemon's own scopes run there (busy): nothing is left for either.
    const busy = ca!.map((c) => c.key);
    const busyB = cb!.map((c) => c.key);
    assert.deepEqual(await claimed(b.leases.claim("B", 3, busyB, 30_000)), [], "nothing left for B");
    assert.deepEqual(await claimed(a.leases.claim("A", 3, busy, 30_000)), [], "nor for A");
    assert.deepEqual(
      (await claimed(a.leases.claim("A", 3, busy.slice(1), 30_000))).map((c) => [c.key, c.from]),
      [[busy[0], null]],
      "a scope A holds that has work and is not busy is A's to run again",
    );
    const lone = await withScopes(await db.server!.createDatabase(), 4);
    assert.deepEqual(
      (await claimed(lone.a.leases.claim("A", 2, [], 30_000))).map((c) => c.key),
      lone.scopes.slice(0, 2),
      "oldest waiting first",
    );
    await Promise.all([a.close(), b.close(), lone.a.close(), lone.b.close()]);
  });

  t("a lease that expires is taken over, and the old holder's renewal no longer includes it", async (url) => {
    const { a, b, scopes } = await withScopes(url, 1);
    const [scope] = scopes;
    assert.deepEqual(
      (await claimed(a.leases.claim("A", 5, [], 300))).map((c) => c.key),
      [scope],
    );
    assert.deepEqual(await claimed(b.leases.claim("B", 5, [], 30_000)), [], "a live lease is not taken");
    assert.deepEqual(await a.leases.renew("A", 300), [scope], "renewal while alive keeps it");
    await sleep(450); // past the 300 ms lease
    assert.equal(await a.leases.holds("A", scope!), false, "expired");
    assert.deepEqual(await claimed(b.leases.claim("B", 5, [], 30_000)), [{ key: scope, channel: CHANNEL, from: "A" }], "taken over from A");
    assert.deepEqual(await a.leases.renew("A", 30_000), [], "A learns it lost the scope");
    assert.equal(await b.leases.holds("B", scope!), true);
    assert.deepEqual(
      (await a.leases.list()).map((l) => [l.key, l.holder]),
      [[scope, "B"]],
    );
    await Promise.all([a.close(), b.close()]);
  });

  t("a scope whose work is done is released and not claimed again until new work arrives", async (url) => {
    const { a, b, scopes } = await withScopes(url, 1);
    const [scope] = scopes;
    await claimed(a.leases.claim("A", 1, [], 30_000));
    const [ev] = await waiting(a, scope!);
    const turn = await a.startTurn(scope!, CHANNEL, [ev!]);
    await a.updateTurn("running", { id: turn, state: "done", attempts: 1, recovered: false, error: null }, "A");
    assert.equal(await b.leases.release("B", scope!), false, "only the holder releases");
    assert.equal(await a.leases.release("A", scope!), true);
    assert.deepEqual(await claimed(b.leases.claim("B", 5, [], 30_000)), [], "no open work, nothing to claim");
    const next = fromWire(mention(owner, "follow-up", { tags: [["e", ev!, "", "root"]] }));
    await a.accept(next, CHANNEL, scope!, CAPS);
    assert.deepEqual(
      (await claimed(b.leases.claim("B", 5, [], 30_000))).map((c) => c.key),
      [scope],
    );
    await Promise.all([a.close(), b.close()]);
  });

  t("a turn left running by a dead holder keeps its scope claimable", async (url) => {
    const { a, b, scopes } = await withScopes(url, 1);
    const [scope] = scopes;
    await claimed(a.leases.claim("A", 1, [], 200));
    const [ev] = await waiting(a, scope!);
    await a.startTurn(scope!, CHANNEL, [ev!]); // A dies here: no waiting events, one running turn
    await sleep(350); // past the 200 ms lease
    assert.deepEqual(
      (await claimed(b.leases.claim("B", 1, [], 30_000))).map((c) => [c.key, c.from]),
      [[scope, "A"]],
    );
    await Promise.all([a.close(), b.close()]);
  });

  t("after a takeover the old holder can neither record a reply nor end the turn (fencing by the lease)", async (url) => {
    const { a, b, scopes } = await withScopes(url, 1);
    const [scope] = scopes;
    await claimed(a.leases.claim("A", 1, [], 200));
    const [ev] = await waiting(a, scope!);
    const turn = await a.startTurn(scope!, CHANNEL, [ev!]);
    await a.recordReply(turn, "1".repeat(64), "A");
    await a.recordReply(turn, "1".repeat(64), "A"); // idempotent
    await sleep(350); // past the 200 ms lease
    assert.deepEqual(
      (await claimed(b.leases.claim("B", 1, [], 30_000))).map((c) => c.from),
      ["A"],
    );
    await assert.rejects(a.recordReply(turn, "2".repeat(64), "A"), LeaseLostError);
    const done = { id: turn, state: "done" as const, attempts: 1, recovered: false, error: null };
    assert.equal(await a.updateTurn("running", done, "A"), false, "A's late end is refused");
    assert.equal((await b.turn(turn))?.state, "running");
    assert.deepEqual((await b.turn(turn))?.reply_ids, ["1".repeat(64)], "only what A recorded while it held the scope");
    assert.equal(await b.updateTurn("running", done, "B"), true);
    assert.equal((await b.event(ev!))?.state, "done");
    await Promise.all([a.close(), b.close()]);
  });

  t("a mid-turn join and its hand-back are fenced by the lease: only the scope's holder makes them", async (url) => {
    const { a, b, scopes } = await withScopes(url, 1);
    const [scope] = scopes;
    await claimed(a.leases.claim("A", 1, [], 30_000));
    const [ev] = await waiting(a, scope!);
    const turn = await a.startTurn(scope!, CHANNEL, [ev!]);
    const steer = fromWire(mention(teammate, "mid-turn"));
    assert.equal((await b.accept(steer, CHANNEL, scope!, CAPS)).fresh, true, "stored by the daemon that heard it first");
    assert.deepEqual(await b.joinTurn(turn, [steer.id], "B"), [], "B does not hold the scope");
    assert.deepEqual(await a.joinTurn(turn, [steer.id], "A"), [steer.id]);
    await b.leaveTurn(turn, [steer.id], "B");
    assert.equal((await a.event(steer.id))?.state, "in_turn", "B cannot hand it back");
    await a.leaveTurn(turn, [steer.id], "A");
    assert.equal((await a.event(steer.id))?.state, "waiting");
    await Promise.all([a.close(), b.close()]);
  });

  t("the fleet's daemons are listed with their lease counts; one that left is gone", async (url) => {
    const { a, b } = await withScopes(url, 3);
    await a.leases.heartbeat({ id: "A", host: "h1", pid: 11, maxConcurrent: 2 });
    await b.leases.heartbeat({ id: "B", host: "h2", pid: 22, maxConcurrent: 4 });
    await claimed(a.leases.claim("A", 2, [], 30_000));
    await claimed(b.leases.claim("B", 4, [], 30_000));
    const fleet = await a.leases.daemons(60_000);
    assert.deepEqual(
      fleet.map((d) => [d.id, d.host, d.pid, d.maxConcurrent, d.leases]),
      [
        ["A", "h1", 11, 2, 2],
        ["B", "h2", 22, 4, 1],
      ],
    );
    await b.leases.leave("B");
    assert.deepEqual(
      (await a.leases.daemons(60_000)).map((d) => d.id),
      ["A"],
    );
    assert.equal((await a.leases.list()).filter((l) => l.holder === "B").length, 0, "its leases ended with it");
    await Promise.all([a.close(), b.close()]);
  });

  t("clock skew against the database is measured (same machine: near zero)", async (url) => {
    const s = await open(url);
    const skew = await s.leases.clockSkewMs();
    assert.ok(Math.abs(skew) < 1000, `skew ${skew} ms`);
    await s.close();
  });
});
