/**
 * The PostgreSQL queue backend (backend.ts; fleet mode): the same operations as the
 * SQLite store, on a database several daemons of one identity share. Accepting is unique
 * by event id, so an event every daemon heard is stored once, whoever heard it first; the
 * scope leases that decide which daemon runs a scope's turns are in `pg-leases.ts`, and
 * the writes only a scope's holder may make are fenced by its lease here.
 *
 * At open the schema is migrated under an advisory lock, and the database is bound to
 * the identity that first used it: another identity, or a schema newer than this code,
 * is refused with a message saying what to do. The URL's password never appears in a
 * message (`where` is the redacted URL).
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import type { Event } from "nostr-tools";
import { redactDatabaseUrl } from "../base/log.js";
import { LeaseLostError, QueueStoreError, StateRefusedError } from "./errors.js";
import { MIGRATION_LOCK_KEY, PG_SCHEMA, PG_SCHEMA_VERSION, migrations } from "./pg-migrations.js";
import { FleetLeases } from "./pg-leases.js";
import type {
  Accepted,
  Claims,
  DaemonInfo,
  EventState,
  QueueBackend,
  QueueCaps,
  QueueDepth,
  ScopeWork,
  StoredEvent,
  TurnRecord,
  TurnState,
  TurnUpdate,
} from "./backend.js";
import { FLEET_LEASE_MS } from "./pg-leases.js";

const FINAL: readonly string[] = ["done", "failed", "cancelled"];
/** The database's clock in unix ms, as SQL. */
const NOW_MS = "(extract(epoch FROM now()) * 1000)::bigint";

export interface PostgresStoreOptions {
  url: string;
  /** The agent's pubkey (hex): the database is bound to it. */
  identity: string;
  /** Connections in the pool; default 10. */
  maxConnections?: number;
  /** Connection attempt timeout; default 10 s. */
  connectTimeoutMs?: number;
  /** The lease period; default FLEET_LEASE_MS (tests shorten it). */
  leaseMs?: number;
  /** The schema it lives in; default `buzz_bridge` (a team's agent: pgSchemaFor(id)). */
  schema?: string;
}

interface EventRow {
  id: string;
  channel: string;
  scope: string;
  created_at: string;
  state: EventState;
  turn_id: string | null;
  joined_after: number | null;
  json: string;
}

interface TurnRow {
  id: string;
  scope: string;
  channel: string;
  state: TurnRecord["state"];
  attempts: number;
  next_attempt_at: string;
  reply_ids: string[];
  trigger_ids: string[];
  recovered: number;
  error: string | null;
  held_since: string | null;
}

export class PostgresStore implements QueueBackend {
  readonly where: string;
  readonly leaseMs: number;
  readonly leases: FleetLeases;
  private closed = false;

  private constructor(
    private readonly pool: pg.Pool,
    url: string,
    leaseMs = FLEET_LEASE_MS,
    private readonly s = PG_SCHEMA,
  ) {
    this.where = redactDatabaseUrl(url);
    this.leaseMs = leaseMs;
    this.leases = new FleetLeases(pool, s);
  }

  /** Connects, migrates and checks the identity binding; throws QueueStoreError when refused. */
  static async open(o: PostgresStoreOptions): Promise<PostgresStore> {
    const where = redactDatabaseUrl(o.url);
    const pool = new pg.Pool({
      connectionString: o.url,
      max: o.maxConnections ?? 10,
      connectionTimeoutMillis: o.connectTimeoutMs ?? 10_000,
      application_name: "buzz-bridge",
    });
    // An idle client's connection dropping (database restart) must not crash the process.
    pool.on("error", () => undefined);
    const store = new PostgresStore(pool, o.url, o.leaseMs, o.schema);
    try {
      await store.migrate(o.identity);
    } catch (err) {
      await pool.end().catch(() => undefined);
      if (err instanceof QueueStoreError) throw err;
      throw new QueueStoreError(
        `cannot use the PostgreSQL database ${where}: ${redactDatabaseUrl((err as Error).message)}. Check state.url and that the database is up.`,
        { cause: err },
      );
    }
    return store;
  }

  private async migrate(identity: string): Promise<void> {
    const c = await this.checkout();
    let failed: unknown;
    try {
      await c.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
      try {
        await c.query(`CREATE SCHEMA IF NOT EXISTS ${this.s}`);
        await c.query(`CREATE TABLE IF NOT EXISTS ${this.s}.meta (key text PRIMARY KEY, value text NOT NULL)`);
        const found = await metaValue(c, this.s, "schema_version");
        const version = found === undefined ? 0 : Number(found);
        if (version > PG_SCHEMA_VERSION) {
          throw new StateRefusedError(
            `the PostgreSQL database ${this.where} was written by a newer buzz-bridge (schema version ${version}; this one understands up to ${PG_SCHEMA_VERSION}). ` +
              `Upgrade every daemon of the fleet, or point state.url at another database.`,
          );
        }
        for (const m of migrations(this.s)) {
          if (m.version <= version) continue;
          await c.query("BEGIN");
          try {
            await c.query(m.sql);
            await c.query(
              `INSERT INTO ${this.s}.meta (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
              [String(m.version)],
            );
            await c.query("COMMIT");
          } catch (err) {
            await c.query("ROLLBACK").catch(() => undefined);
            throw new QueueStoreError(
              `migrating the PostgreSQL database ${this.where} to schema version ${m.version} failed: ${(err as Error).message}`,
              { cause: err },
            );
          }
        }
        await c.query(`INSERT INTO ${this.s}.meta (key, value) VALUES ('identity', $1) ON CONFLICT (key) DO NOTHING`, [identity]);
        const bound = await metaValue(c, this.s, "identity");
        if (bound !== identity) {
          throw new StateRefusedError(
            `the PostgreSQL database ${this.where} belongs to another agent identity (pubkey ${bound}); this daemon's is ${identity}. ` +
              `One database serves one identity: give this fleet its own database (or schema-separated database) in state.url.`,
          );
        }
      } finally {
        await c.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]).catch(() => undefined);
      }
    } catch (err) {
      failed = err;
      throw err;
    } finally {
      c.done(failed);
    }
  }

  /**
   * A client of the pool for several statements. The server may end the connection while
   * the client is between two of them (a restart, an outage): pg then reports it as an
   * `error` event, which would end the process if nobody listened; the next statement fails
   * with it instead. `done(err)` hands the client back, or discards it after a failure.
   */
  private async checkout(): Promise<pg.PoolClient & { done(failed?: unknown): void }> {
    const c = await this.pool.connect();
    const ignore = () => undefined;
    c.on("error", ignore);
    return Object.assign(c, {
      done(failed?: unknown) {
        c.off("error", ignore);
        c.release(failed instanceof Error ? failed : failed === undefined ? undefined : new Error(String(failed)));
      },
    });
  }

  /**
   * The fleet's id: made once, by whichever daemon asks first, and kept in the database, so
   * every daemon on it reads the same one (their instance beacons recognise each other by it).
   */
  async fleetId(): Promise<string> {
    await this.pool.query(`INSERT INTO ${this.s}.meta (key, value) VALUES ('fleet_id', $1) ON CONFLICT (key) DO NOTHING`, [randomUUID()]);
    const r = await this.pool.query<{ value: string }>(`SELECT value FROM ${this.s}.meta WHERE key = 'fleet_id'`);
    return r.rows[0]!.value;
  }

  /** The schema version the database is at (for doctor). */
  async schemaVersion(): Promise<number> {
    const r = await this.pool.query<{ value: string }>(`SELECT value FROM ${this.s}.meta WHERE key = 'schema_version'`);
    return Number(r.rows[0]?.value ?? 0);
  }

  private async tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    const c = await this.checkout();
    let failed: unknown;
    try {
      await c.query("BEGIN");
      const out = await fn(c);
      await c.query("COMMIT");
      return out;
    } catch (err) {
      failed = err;
      await c.query("ROLLBACK").catch(() => undefined);
      throw err;
    } finally {
      c.done(failed);
    }
  }

  async accept(ev: Event, channel: string, scope: string, caps: QueueCaps): Promise<Accepted> {
    // One statement (so one round trip, and atomic): the event once — refused when the queue
    // is full —, the cursor, the scope's lease row, and the scope's waiting count for its cap.
    // The counts are of the snapshot before the insert; all waiting events are counted only
    // when the caller asks for the total cap.
    const r = await this.pool.query<{ n: string; state: EventState | null; in_scope: string }>(
      `WITH waiting AS (
         SELECT CASE WHEN $7::bigint IS NULL THEN 0 ELSE (SELECT count(*) FROM ${this.s}.events WHERE state = 'waiting') END AS total,
                (SELECT count(*) FROM ${this.s}.events WHERE state = 'waiting' AND scope = $3) AS in_scope),
       ins AS (
         INSERT INTO ${this.s}.events (id, channel, scope, created_at, accepted_at, state, json)
         SELECT $1, $2, $3, $4, $5, CASE WHEN $7::bigint IS NOT NULL AND w.total >= $7 THEN 'refused' ELSE 'waiting' END, $6 FROM waiting w
         ON CONFLICT (id) DO NOTHING RETURNING scope, channel, state),
       cur AS (
         INSERT INTO ${this.s}.cursors (channel, created_at) VALUES ($2, $4)
         ON CONFLICT (channel) DO UPDATE SET created_at = greatest(${this.s}.cursors.created_at, excluded.created_at)),
       sc AS (
         INSERT INTO ${this.s}.scopes (key, channel) SELECT scope, channel FROM ins ON CONFLICT (key) DO NOTHING)
       SELECT (SELECT count(*) FROM ins) AS n, (SELECT state FROM ins) AS state, (SELECT in_scope FROM waiting) AS in_scope`,
      [ev.id, channel, scope, ev.created_at, Date.now(), JSON.stringify(ev), caps.total ?? null],
    );
    const row = r.rows[0]!;
    if (Number(row.n) === 0) return { fresh: false, refused: [] };
    if (row.state === "refused")
      return { fresh: true, refused: [{ id: ev.id, author: ev.pubkey, created_at: ev.created_at, reason: "queue-full" }] };
    if (Number(row.in_scope) + 1 <= caps.scope) return { fresh: true, refused: [] };
    const refused = (await this.refuseOverCap(scope, caps.scope)).map((e) => ({ ...e, reason: "scope-cap" as const }));
    return { fresh: true, refused };
  }

  /**
   * The scope cap across the fleet: past `cap` waiting events in `scope`, the oldest are
   * marked refused (atomically, so two daemons never refuse the same event twice) and
   * returned for the notice.
   */
  private async refuseOverCap(scope: string, cap: number): Promise<Array<{ id: string; author: string; created_at: number }>> {
    const r = await this.pool.query<{ id: string; json: string; created_at: string }>(
      `UPDATE ${this.s}.events e SET state = 'refused'
       FROM (SELECT id FROM ${this.s}.events WHERE scope = $1 AND state = 'waiting' ORDER BY created_at DESC, id DESC OFFSET $2 FOR UPDATE SKIP LOCKED) old
       WHERE e.id = old.id RETURNING e.id, e.json, e.created_at`,
      [scope, cap],
    );
    return r.rows.map((row) => ({ id: row.id, author: (JSON.parse(row.json) as Event).pubkey, created_at: Number(row.created_at) }));
  }

  async event(eventId: string): Promise<StoredEvent | undefined> {
    const r = await this.pool.query<EventRow>(`SELECT * FROM ${this.s}.events WHERE id = $1`, [eventId]);
    return r.rows[0] ? toStored(r.rows[0]) : undefined;
  }

  async claim(holder: string, limit: number, busy: readonly string[]): Promise<Claims> {
    return this.leases.claim(holder, limit, busy, this.leaseMs);
  }

  async renew(daemon: DaemonInfo, held: readonly string[]): Promise<string[]> {
    await this.leases.heartbeat(daemon);
    const kept = new Set(await this.leases.renew(daemon.id, this.leaseMs));
    return held.filter((k) => kept.has(k));
  }

  async release(holder: string, key: string): Promise<void> {
    await this.leases.release(holder, key);
  }

  async leave(holder: string): Promise<void> {
    await this.leases.leave(holder);
  }

  async scopeWork(scope: string, batchSize: number): Promise<ScopeWork> {
    const t = await this.pool.query<TurnRow & { due: boolean }>(
      `SELECT *, next_attempt_at <= ${NOW_MS} AS due FROM ${this.s}.turns WHERE scope = $1 AND state IN ('queued', 'running') ORDER BY id LIMIT 1`,
      [scope],
    );
    if (t.rows[0]) return { turn: toTurn(t.rows[0]), due: t.rows[0].state === "queued" ? t.rows[0].due : undefined, waiting: [] };
    const w = await this.pool.query<{ id: string }>(
      `SELECT id FROM ${this.s}.events WHERE scope = $1 AND state = 'waiting' ORDER BY created_at, id LIMIT $2`,
      [scope, batchSize],
    );
    return { waiting: w.rows.map((r) => r.id) };
  }

  /**
   * Only events still waiting join the turn: between reading a scope's waiting events and
   * this, another daemon may have ended some (deleted by their author, `!cancel`).
   */
  async startTurn(scope: string, channel: string, eventIds: readonly string[]): Promise<number> {
    return this.tx(async (c) => {
      const r = await c.query<{ id: string }>(
        `INSERT INTO ${this.s}.turns (scope, channel, state, attempts, next_attempt_at, trigger_ids, updated_at) VALUES ($1, $2, 'running', 1, 0, '[]', $3) RETURNING id`,
        [scope, channel, Date.now()],
      );
      const id = Number(r.rows[0]!.id);
      const taken = await c.query<{ id: string }>(
        `UPDATE ${this.s}.events SET state = 'in_turn', turn_id = $1 WHERE id = ANY($2::text[]) AND state = 'waiting' RETURNING id`,
        [id, [...eventIds]],
      );
      const ids = new Set(taken.rows.map((row) => row.id));
      await c.query(`UPDATE ${this.s}.turns SET trigger_ids = $2 WHERE id = $1`, [id, JSON.stringify(eventIds.filter((e) => ids.has(e)))]);
      return id;
    });
  }

  async turn(id: number): Promise<TurnRecord | undefined> {
    const r = await this.pool.query<TurnRow>(`SELECT * FROM ${this.s}.turns WHERE id = $1`, [id]);
    return r.rows[0] ? toTurn(r.rows[0]) : undefined;
  }

  async eventsOfTurn(turnId: number): Promise<StoredEvent[]> {
    const r = await this.pool.query<EventRow>(`SELECT * FROM ${this.s}.events WHERE turn_id = $1 ORDER BY created_at, id`, [turnId]);
    return r.rows.map(toStored);
  }

  /**
   * Only while the turn is still in state `from` (a turn cancelled by the owner through
   * another daemon stays cancelled) and `holder` holds its scope (a daemon whose scope was
   * taken over cannot touch the new holder's attempt). A retry is due by the database's
   * clock, which every daemon shares.
   */
  async updateTurn(from: TurnState, t: TurnUpdate, holder: string): Promise<boolean> {
    return this.tx(async (c) => {
      const r = await c.query(
        `UPDATE ${this.s}.turns SET state = $1, attempts = $2, next_attempt_at = CASE WHEN $1 = 'queued' THEN ${NOW_MS} + $3::bigint ELSE 0 END,
           recovered = $4, error = $5, updated_at = $6, held_since = coalesce(held_since, $10::bigint)
         WHERE id = $7 AND state = $8 AND EXISTS (SELECT 1 FROM ${this.s}.scopes s WHERE s.key = ${this.s}.turns.scope AND s.holder = $9)`,
        [t.state, t.attempts, t.retryInMs ?? 0, t.recovered ? 1 : 0, t.error, Date.now(), t.id, from, holder, t.heldSince ?? null],
      );
      if (!r.rowCount) return false;
      if (FINAL.includes(t.state)) await c.query(`UPDATE ${this.s}.events SET state = $1 WHERE turn_id = $2`, [t.state, t.id]);
      return true;
    });
  }

  /**
   * One statement, so two daemons (a holder and its successor) never lose each other's ids.
   * Fenced with `holder`: a daemon whose lease was taken over cannot add a reply after the
   * new holder has read the list (and then publish it): LeaseLostError, and it is not sent.
   */
  async recordReply(turnId: number, replyId: string, holder?: string): Promise<void> {
    if (holder === undefined) {
      await this.pool.query(
        `UPDATE ${this.s}.turns SET reply_ids = reply_ids || to_jsonb($2::text), updated_at = $3 WHERE id = $1 AND NOT reply_ids ? $2`,
        [turnId, replyId, Date.now()],
      );
      return;
    }
    const r = await this.pool.query<{ id: string }>(
      `UPDATE ${this.s}.turns t SET reply_ids = CASE WHEN t.reply_ids ? $2 THEN t.reply_ids ELSE t.reply_ids || to_jsonb($2::text) END, updated_at = $4
       FROM ${this.s}.scopes s WHERE t.id = $1 AND s.key = t.scope AND s.holder = $3 AND s.lease_until >= now() RETURNING t.id`,
      [turnId, replyId, holder, Date.now()],
    );
    if (!r.rowCount) throw new LeaseLostError(`turn ${turnId}: this daemon (${holder}) no longer holds its scope's lease; not publishing`);
  }

  async joinTurn(turnId: number, eventIds: readonly string[], holder: string): Promise<string[]> {
    if (eventIds.length === 0) return [];
    return this.tx(async (c) => {
      // The turn's row is locked first, so its end (or a takeover's resume) waits for the join or comes before it.
      const t = await c.query<{ scope: string; n: number }>(
        `SELECT t.scope, jsonb_array_length(t.reply_ids) AS n FROM ${this.s}.turns t WHERE t.id = $1 AND t.state = 'running'
           AND EXISTS (SELECT 1 FROM ${this.s}.scopes s WHERE s.key = t.scope AND s.holder = $2 AND s.lease_until >= now())
         FOR UPDATE OF t`,
        [turnId, holder],
      );
      const turn = t.rows[0];
      if (!turn) return [];
      const r = await c.query<{ id: string }>(
        `UPDATE ${this.s}.events SET state = 'in_turn', turn_id = $1, joined_after = $2 WHERE id = ANY($3::text[]) AND state = 'waiting' AND scope = $4 RETURNING id`,
        [turnId, turn.n, [...eventIds], turn.scope],
      );
      const joined = [...new Set(eventIds)].filter((id) => r.rows.some((row) => row.id === id));
      if (joined.length)
        await c.query(`UPDATE ${this.s}.turns SET trigger_ids = trigger_ids || $2::jsonb, updated_at = $3 WHERE id = $1`, [
          turnId,
          JSON.stringify(joined),
          Date.now(),
        ]);
      return joined;
    });
  }

  async leaveTurn(turnId: number, eventIds: readonly string[], holder: string): Promise<void> {
    if (eventIds.length === 0) return;
    await this.tx(async (c) => {
      const held = await c.query(
        `SELECT 1 FROM ${this.s}.turns t WHERE t.id = $1 AND EXISTS (SELECT 1 FROM ${this.s}.scopes s WHERE s.key = t.scope AND s.holder = $2 AND s.lease_until >= now()) FOR UPDATE OF t`,
        [turnId, holder],
      );
      if (!held.rowCount) return;
      const r = await c.query<{ id: string }>(
        `UPDATE ${this.s}.events SET state = 'waiting', turn_id = NULL, joined_after = NULL WHERE id = ANY($2::text[]) AND turn_id = $1 RETURNING id`,
        [turnId, [...eventIds]],
      );
      const left = r.rows.map((row) => row.id);
      if (left.length)
        await c.query(
          `UPDATE ${this.s}.turns SET trigger_ids = coalesce((SELECT jsonb_agg(x) FROM jsonb_array_elements(trigger_ids) x WHERE NOT (x #>> '{}') = ANY($2::text[])), '[]'), updated_at = $3 WHERE id = $1`,
          [turnId, left, Date.now()],
        );
    });
  }

  async notRunning(turnIds: readonly number[]): Promise<number[]> {
    if (turnIds.length === 0) return [];
    const r = await this.pool.query<{ id: string }>(`SELECT id FROM ${this.s}.turns WHERE id = ANY($1::bigint[]) AND state <> 'running'`, [
      [...turnIds],
    ]);
    return r.rows.map((row) => Number(row.id));
  }

  async cancelScopes(channel: string, keys: readonly string[] | undefined): Promise<{ running: number[]; ended: number }> {
    return this.tx(async (c) => {
      const match = keys ? `scope = ANY($1::text[])` : `(scope = $1 OR starts_with(scope, $1 || '/'))`;
      const arg = keys ? [...keys] : channel;
      const ev = await c.query(`UPDATE ${this.s}.events SET state = 'cancelled' WHERE state = 'waiting' AND ${match}`, [arg]);
      const turns = await c.query<{ id: string; was: string }>(
        `UPDATE ${this.s}.turns t SET state = 'cancelled', error = 'cancelled by owner', updated_at = $2 FROM (SELECT id, state AS was FROM ${this.s}.turns WHERE state IN ('queued', 'running') AND ${match} FOR UPDATE) o WHERE t.id = o.id RETURNING t.id, o.was`,
        [arg, Date.now()],
      );
      const ids = turns.rows.map((r) => Number(r.id));
      if (ids.length) await c.query(`UPDATE ${this.s}.events SET state = 'cancelled' WHERE turn_id = ANY($1::bigint[])`, [ids]);
      return { running: turns.rows.filter((r) => r.was === "running").map((r) => Number(r.id)), ended: (ev.rowCount ?? 0) + ids.length };
    });
  }

  /**
   * A daemon about to run the scope compares the count with the one it saw when its
   * session was made, and starts a fresh session when it moved.
   */
  async bumpRotation(key: string): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.s}.claims (key, at) VALUES ('rotate:' || $1, 1) ON CONFLICT (key) DO UPDATE SET at = ${this.s}.claims.at + 1`,
      [key],
    );
  }

  async rotationEpoch(scope: string, channel: string): Promise<number> {
    const r = await this.pool.query<{ n: string | null }>(
      `SELECT sum(at) AS n FROM ${this.s}.claims WHERE key IN ('rotate:' || $1, 'rotate:' || $2)`,
      [scope, channel],
    );
    return Number(r.rows[0]?.n ?? 0);
  }

  async replaceQueuedContent(eventId: string, content: string, editId: string): Promise<boolean> {
    return this.tx(async (c) => {
      const e = await c.query<{ state: EventState; turn_id: string | null; json: string }>(
        `SELECT state, turn_id, json FROM ${this.s}.events WHERE id = $1 FOR UPDATE`,
        [eventId],
      );
      const row = e.rows[0];
      if (!row) return false;
      if (row.state !== "waiting") {
        // Locked, so a daemon resuming the retry reads the batch after this edit, or this sees it running.
        const t =
          row.state === "in_turn" && row.turn_id !== null
            ? await c.query<{ state: string }>(`SELECT state FROM ${this.s}.turns WHERE id = $1 FOR SHARE`, [row.turn_id])
            : undefined;
        if (t?.rows[0]?.state !== "queued") return false;
      }
      await c.query(`UPDATE ${this.s}.events SET json = $2 WHERE id = $1`, [
        eventId,
        JSON.stringify({ ...(JSON.parse(row.json) as Event), content, edited: editId }),
      ]);
      return true;
    });
  }

  async dropWaiting(eventId: string): Promise<boolean> {
    const r = await this.pool.query(`UPDATE ${this.s}.events SET state = 'deleted' WHERE id = $1 AND state = 'waiting'`, [eventId]);
    return (r.rowCount ?? 0) > 0;
  }

  async claimControl(eventId: string, createdAt: number): Promise<boolean> {
    const r = await this.pool.query(`INSERT INTO ${this.s}.controls (id, created_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`, [
      eventId,
      createdAt,
    ]);
    return (r.rowCount ?? 0) > 0;
  }

  async claimOnce(key: string, windowMs: number): Promise<boolean> {
    const now = Date.now();
    const r = await this.pool.query(
      `INSERT INTO ${this.s}.claims (key, at) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET at = excluded.at WHERE ${this.s}.claims.at <= $3`,
      [key, now, now - windowMs],
    );
    return (r.rowCount ?? 0) > 0;
  }

  /** A conversation the agent is in (backend.ts `markActive`), kept among the claims as `active:<key>`. */
  async markActive(key: string, at: number): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.s}.claims (key, at) VALUES ('active:' || $1, $2) ON CONFLICT (key) DO UPDATE SET at = GREATEST(${this.s}.claims.at, excluded.at)`,
      [key, at],
    );
  }

  async activeSince(sinceMs: number): Promise<{ key: string; at: number }[]> {
    const r = await this.pool.query<{ key: string; at: string }>(
      `SELECT substr(key, 8) AS key, at FROM ${this.s}.claims WHERE starts_with(key, 'active:') AND at >= $1 ORDER BY at`,
      [sinceMs],
    );
    return r.rows.map((row) => ({ key: row.key, at: Number(row.at) }));
  }

  async claimFirst(keys: readonly string[]): Promise<string[]> {
    if (keys.length === 0) return [];
    const r = await this.pool.query<{ key: string }>(
      `INSERT INTO ${this.s}.claims (key, at) SELECT k, $2 FROM unnest($1::text[]) AS k ON CONFLICT (key) DO NOTHING RETURNING key`,
      [[...new Set(keys)], Date.now()],
    );
    const claimed = new Set(r.rows.map((row) => row.key));
    return keys.filter((k, i) => claimed.has(k) && keys.indexOf(k) === i);
  }

  /** Periods are cut by the database's clock, so daemons with drifting clocks agree on them. */
  async claimPeriod(name: string, periodMs: number): Promise<boolean> {
    const r = await this.pool.query(
      `INSERT INTO ${this.s}.claims (key, at) VALUES ($1 || ':' || floor(extract(epoch FROM now()) * 1000 / $2)::bigint, $3) ON CONFLICT (key) DO NOTHING`,
      [name, periodMs, Date.now()],
    );
    return (r.rowCount ?? 0) > 0;
  }

  async depth(): Promise<QueueDepth> {
    const r = await this.pool.query<{ channel: string; n: string; turns: string }>(
      `SELECT e.channel, count(*) AS n, count(DISTINCT e.turn_id) AS turns FROM ${this.s}.events e LEFT JOIN ${this.s}.turns t ON t.id = e.turn_id
       WHERE e.state = 'waiting' OR (e.state = 'in_turn' AND t.state = 'queued') GROUP BY e.channel`,
    );
    const s = await this.pool.query<{ scopes: string; retrying: string; running: string }>(
      `SELECT (SELECT count(*) FROM (SELECT scope FROM ${this.s}.events WHERE state = 'waiting'
                 UNION SELECT scope FROM ${this.s}.turns WHERE state IN ('queued', 'running')) x) AS scopes,
              (SELECT count(*) FROM ${this.s}.turns WHERE state = 'queued') AS retrying,
              (SELECT count(*) FROM ${this.s}.turns WHERE state = 'running') AS running`,
    );
    const byChannel = new Map(r.rows.map((row) => [row.channel, Number(row.n)]));
    const queued = [...byChannel.values()].reduce((a, b) => a + b, 0);
    const n = (k: "scopes" | "retrying" | "running") => Number(s.rows[0]?.[k] ?? 0);
    return { queued, retrying: n("retrying"), running: n("running"), scopes: n("scopes"), byChannel };
  }

  async prune(olderThanMs: number, now = Date.now()): Promise<void> {
    const cutoff = now - olderThanMs;
    await this.tx(async (c) => {
      await c.query(`DELETE FROM ${this.s}.sessions WHERE updated_at < $1`, [cutoff]);
      await c.query(`DELETE FROM ${this.s}.events WHERE state NOT IN ('waiting', 'in_turn') AND accepted_at < $1`, [cutoff]);
      await c.query(`DELETE FROM ${this.s}.turns WHERE state NOT IN ('queued', 'running') AND updated_at < $1`, [cutoff]);
      await c.query(`DELETE FROM ${this.s}.controls WHERE created_at < $1`, [Math.floor(cutoff / 1000)]);
      // Rotation counts are counters, not times: they stay.
      await c.query(`DELETE FROM ${this.s}.claims WHERE at < $1 AND NOT starts_with(key, 'rotate:')`, [cutoff]);
      // Scopes nobody holds and with nothing left to do; a new mention recreates the row.
      await c.query(
        `DELETE FROM ${this.s}.scopes s WHERE s.holder IS NULL
           AND NOT EXISTS (SELECT 1 FROM ${this.s}.events e WHERE e.scope = s.key AND e.state IN ('waiting', 'in_turn'))
           AND NOT EXISTS (SELECT 1 FROM ${this.s}.turns t WHERE t.scope = s.key AND t.state IN ('queued', 'running'))`,
      );
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}

async function metaValue(c: pg.ClientBase, schema: string, key: string): Promise<string | undefined> {
  const r = await c.query<{ value: string }>(`SELECT value FROM ${schema}.meta WHERE key = $1`, [key]);
  return r.rows[0]?.value;
}

function toStored(row: EventRow): StoredEvent {
  return {
    id: row.id,
    channel: row.channel,
    scope: row.scope,
    created_at: Number(row.created_at),
    state: row.state,
    turn_id: row.turn_id === null ? null : Number(row.turn_id),
    joined_after: row.joined_after,
    event: JSON.parse(row.json) as Event,
  };
}

function toTurn(row: TurnRow): TurnRecord {
  return {
    id: Number(row.id),
    scope: row.scope,
    channel: row.channel,
    state: row.state,
    attempts: row.attempts,
    next_attempt_at: Number(row.next_attempt_at),
    reply_ids: row.reply_ids,
    trigger_ids: row.trigger_ids,
    recovered: row.recovered === 1,
    error: row.error,
    held_since: row.held_since === null ? null : Number(row.held_since),
  };
}
