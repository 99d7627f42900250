/**
 * Scope leases for a fleet: a scope (thread or channel) with work is held by one daemon
 * at a time, until a lease expiry that the holder renews while it lives. A daemon with
 * spare `agent.max_concurrent` claims unheld or expired scopes with open work, oldest
 * waiting mention first.
 *
 * Why plain `SELECT … FOR UPDATE SKIP LOCKED` and not a job-queue library (pg-boss,
 * graphile-worker): those lease a job, one row at a time, to whichever worker comes
 * next; here the unit is a scope that keeps its affinity to one daemon across many
 * turns (its agent session lives there) and batches arrivals into the running turn. A
 * job per turn would scatter a thread's turns over the fleet and lose both. The lease is
 * one row per scope; SKIP LOCKED lets daemons claiming at once pass over each other's
 * candidates instead of queueing on them.
 *
 * Every time is the database's clock (`now()`), so a daemon whose own clock drifts
 * neither steals a live lease nor keeps an expired one; doctor reports the skew.
 */
import type pg from "pg";
import type { Claims, DaemonInfo } from "./backend.js";
import { PG_SCHEMA } from "./pg-migrations.js";

/** The database's clock in unix ms, as SQL. */
const NOW_MS = "(extract(epoch FROM now()) * 1000)::bigint";

/** The lease period: a scope whose holder stopped renewing is taken over after this long. */
export const FLEET_LEASE_MS = 30_000;

export interface LeaseRow {
  key: string;
  holder: string;
  /** Until expiry by the database's clock; negative when expired. */
  expiresInMs: number;
}

export interface FleetDaemon {
  id: string;
  host: string;
  pid: number;
  maxConcurrent: number;
  seenAgoMs: number;
  leases: number;
}

export class FleetLeases {
  constructor(
    private readonly pool: pg.Pool,
    private readonly s = PG_SCHEMA,
  ) {}

  /** Announces (or refreshes) a daemon of the fleet; call it with every renewal. */
  async heartbeat(d: DaemonInfo): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.s}.daemons (id, host, pid, max_concurrent) VALUES ($1, $2, $3, $4)
       ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, max_concurrent = excluded.max_concurrent, seen_at = now()`,
      [d.id, d.host, d.pid, d.maxConcurrent],
    );
  }

  /** A daemon leaving the fleet on purpose: its leases end now and its row goes. */
  async leave(daemon: string): Promise<void> {
    await this.pool.query(`UPDATE ${this.s}.scopes SET holder = NULL, lease_until = NULL WHERE holder = $1`, [daemon]);
    await this.pool.query(`DELETE FROM ${this.s}.daemons WHERE id = $1`, [daemon]);
  }

  /**
   * Claims up to `limit` scopes with open work (waiting events, a turn left running, or a
   * retry due by the database's clock) that nobody holds, whose lease expired, or that
   * `daemon` holds already, oldest waiting work first; `busy` are left out (this daemon's
   * scopes with a turn running or still being written). A scope whose retry is not due yet
   * waits with it: its newer messages run after the retry, not before. Also says when the
   * earliest retry not yet due comes due.
   */
  async claim(daemon: string, limit: number, busy: readonly string[], ttlMs: number): Promise<Claims> {
    const r = await this.pool.query<{ key: string | null; channel: string | null; was: string | null; next_due: string | null }>(
      `WITH pick AS (
         SELECT c.key, c.holder AS was FROM ${this.s}.scopes c
         WHERE (c.holder IS NULL OR c.lease_until < now() OR c.holder = $1)
           AND NOT (c.key = ANY($4::text[]))
           AND (EXISTS (SELECT 1 FROM ${this.s}.events e WHERE e.scope = c.key AND e.state = 'waiting')
             OR EXISTS (SELECT 1 FROM ${this.s}.turns t WHERE t.scope = c.key AND (t.state = 'running' OR (t.state = 'queued' AND t.next_attempt_at <= ${NOW_MS}))))
           AND NOT EXISTS (SELECT 1 FROM ${this.s}.turns q WHERE q.scope = c.key AND q.state = 'queued' AND q.next_attempt_at > ${NOW_MS})
         ORDER BY (SELECT min(e.created_at) FROM ${this.s}.events e WHERE e.scope = c.key AND e.state IN ('waiting', 'in_turn')) NULLS LAST,
           (SELECT min(e.accepted_at) FROM ${this.s}.events e WHERE e.scope = c.key AND e.state IN ('waiting', 'in_turn')), c.key
         LIMIT $2
         FOR UPDATE SKIP LOCKED
       ),
       taken AS (
         UPDATE ${this.s}.scopes s SET holder = $1, lease_until = now() + $3 * interval '1 millisecond'
         FROM pick WHERE s.key = pick.key
         RETURNING s.key, s.channel, pick.was)
       SELECT key, channel, was, NULL AS next_due FROM taken
       UNION ALL
       SELECT NULL, NULL, NULL, (SELECT min(next_attempt_at) - ${NOW_MS} FROM ${this.s}.turns WHERE state = 'queued' AND next_attempt_at > ${NOW_MS})`,
      [daemon, Math.max(0, limit), ttlMs, [...busy]],
    );
    const next = r.rows.find((row) => row.key === null)?.next_due;
    return {
      scopes: r.rows
        .filter((row) => row.key !== null)
        .map((row) => ({ key: row.key!, channel: row.channel!, from: row.was === daemon ? null : row.was })),
      ...(next !== null && next !== undefined ? { nextDueInMs: Number(next) } : {}),
    };
  }

  /**
   * Extends every lease this daemon still holds; returns their keys. A scope missing
   * from the answer was taken over after its lease expired: stop acting on it.
   */
  async renew(daemon: string, ttlMs: number): Promise<string[]> {
    const r = await this.pool.query<{ key: string }>(
      `UPDATE ${this.s}.scopes SET lease_until = now() + $2 * interval '1 millisecond' WHERE holder = $1 RETURNING key`,
      [daemon, ttlMs],
    );
    return r.rows.map((row) => row.key);
  }

  /** Gives a scope up (its work is done); only if this daemon still holds it. */
  async release(daemon: string, key: string): Promise<boolean> {
    const r = await this.pool.query(`UPDATE ${this.s}.scopes SET holder = NULL, lease_until = NULL WHERE key = $1 AND holder = $2`, [
      key,
      daemon,
    ]);
    return (r.rowCount ?? 0) > 0;
  }

  /** Whether this daemon holds the scope's unexpired lease now. */
  async holds(daemon: string, key: string): Promise<boolean> {
    const r = await this.pool.query(`SELECT 1 FROM ${this.s}.scopes WHERE key = $1 AND holder = $2 AND lease_until >= now()`, [
      key,
      daemon,
    ]);
    return (r.rowCount ?? 0) > 0;
  }

  /** Every held lease (live or expired but not yet taken over). */
  async list(): Promise<LeaseRow[]> {
    const r = await this.pool.query<{ key: string; holder: string; ms: number }>(
      `SELECT key, holder, (extract(epoch FROM lease_until - now()) * 1000)::float8 AS ms FROM ${this.s}.scopes WHERE holder IS NOT NULL ORDER BY holder, key`,
    );
    return r.rows.map((row) => ({ key: row.key, holder: row.holder, expiresInMs: Math.round(row.ms) }));
  }

  /** The fleet's daemons seen within `withinMs`, with how many leases each holds. */
  async daemons(withinMs: number): Promise<FleetDaemon[]> {
    const r = await this.pool.query<{ id: string; host: string; pid: number; max_concurrent: number; ago: number; leases: string }>(
      `SELECT d.id, d.host, d.pid, d.max_concurrent, (extract(epoch FROM now() - d.seen_at) * 1000)::float8 AS ago,
              (SELECT count(*) FROM ${this.s}.scopes s WHERE s.holder = d.id AND s.lease_until >= now()) AS leases
       FROM ${this.s}.daemons d WHERE d.seen_at >= now() - $1 * interval '1 millisecond' ORDER BY d.started_at, d.id`,
      [withinMs],
    );
    return r.rows.map((row) => ({
      id: row.id,
      host: row.host,
      pid: row.pid,
      maxConcurrent: row.max_concurrent,
      seenAgoMs: Math.round(row.ago),
      leases: Number(row.leases),
    }));
  }

  /** Events waiting for a turn across the fleet. */
  async queueDepth(): Promise<number> {
    const r = await this.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${this.s}.events WHERE state = 'waiting'`);
    return Number(r.rows[0]?.n ?? 0);
  }

  /**
   * This machine's clock minus the database's, in ms (positive: ours is ahead), measured
   * against the middle of the round trip.
   */
  async clockSkewMs(): Promise<number> {
    const before = Date.now();
    const r = await this.pool.query<{ ms: number }>(`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms`);
    const after = Date.now();
    return Math.round((before + after) / 2 - r.rows[0]!.ms);
  }
}
