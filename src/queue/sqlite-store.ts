/**
 * The SQLite queue backend (backend.ts) and this machine's own state: `queue.db` under
 * `state_dir`, in WAL mode. An accepted event is written here before anything else
 * happens, so a crash between acceptance and the end of its turn loses nothing.
 *
 * One daemon uses the file (the state lock guarantees it), so a scope's lease is always
 * held: a claim takes every scope with work, renewing and releasing change nothing, and a
 * fenced write is a plain one. SQLite here is synchronous (src/base/sqlite.ts); the backend's methods are
 * asynchronous only to share the interface with PostgreSQL, and each runs to its end
 * before it returns (so nothing else runs in between, and the operations that read then
 * write are atomic).
 *
 * Beside the queue, the file holds what belongs to this machine in a fleet too (the
 * methods that stay synchronous): the relay cursor, agent session ids, the agent process
 * groups this daemon started, and which events its gate accepted or denied.
 *
 * Durability: `synchronous = NORMAL` with WAL keeps every committed transaction across a
 * process crash (SIGKILL, OOM); only an OS crash or power loss can lose the last commits.
 * FULL would fsync each accepted mention, which costs more than a burst can afford.
 */
import { Database } from "../base/sqlite.js";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import type {
  Accepted,
  Claims,
  DaemonInfo,
  QueueBackend,
  QueueCaps,
  QueueDepth,
  ScopeWork,
  StoredEvent,
  TurnRecord,
  TurnState,
  TurnUpdate,
} from "./backend.js";
import { QueueStoreError, storeUnavailable } from "./errors.js";
import { LockPatience } from "./lock-patience.js";
import { privateSqliteFile } from "../base/private-file.js";
import { parseScopeKey } from "./scope.js";

export const SCHEMA_VERSION = 1;
export const STORE_FILE = "queue.db";

const FINAL: readonly TurnState[] = ["done", "failed", "cancelled"];

interface EventRow extends Omit<StoredEvent, "event"> {
  json: string;
}

interface TurnRow extends Omit<TurnRecord, "reply_ids" | "trigger_ids" | "recovered"> {
  reply_ids: string;
  trigger_ids: string;
  recovered: number;
}

const DDL = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
  id TEXT PRIMARY KEY,
  channel TEXT NOT NULL,
  scope TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  accepted_at INTEGER NOT NULL,
  state TEXT NOT NULL,
  turn_id INTEGER,
  json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_open ON events (state, scope, created_at);
CREATE TABLE IF NOT EXISTS turns (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  scope TEXT NOT NULL,
  channel TEXT NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL DEFAULT 0,
  reply_ids TEXT NOT NULL DEFAULT '[]',
  trigger_ids TEXT NOT NULL DEFAULT '[]',
  recovered INTEGER NOT NULL DEFAULT 0,
  error TEXT,
  updated_at INTEGER NOT NULL,
  held_since INTEGER
);
CREATE INDEX IF NOT EXISTS turns_open ON turns (state);
CREATE TABLE IF NOT EXISTS cursors (channel TEXT PRIMARY KEY, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS controls (id TEXT PRIMARY KEY, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (scope TEXT PRIMARY KEY, agent TEXT NOT NULL, session_id TEXT NOT NULL, updated_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS agent_groups (pgid INTEGER PRIMARY KEY, identity TEXT NOT NULL, started_at INTEGER NOT NULL);
`;

/** What `doctor` finds in a state directory's queue file (SqliteStore.inspect). */
export type QueueFileReport =
  | { state: "absent"; file: string }
  | { state: "intact"; file: string; waiting: number; open: number }
  | { state: "newer"; file: string; version: number }
  | { state: "damaged"; file: string; problem: string }
  | { state: "unreadable"; file: string; error: string };

export interface SqliteStoreOptions {
  /** The clock retries are due by (unix ms); tests pass their own. Default Date.now. */
  now?: () => number;
}

export class SqliteStore implements QueueBackend {
  readonly where: string;
  readonly leaseMs = Number.POSITIVE_INFINITY;
  private readonly db: Database;
  private readonly patience: LockPatience;
  private readonly stmt: ReturnType<SqliteStore["prepare"]>;
  private readonly now: () => number;

  /** Opens (creating if needed) `<stateDir>/queue.db`. */
  static open(stateDir: string, opts: SqliteStoreOptions = {}): SqliteStore {
    try {
      mkdirSync(stateDir, { recursive: true });
    } catch (err) {
      throw new QueueStoreError(`cannot create state_dir ${stateDir}: ${(err as Error).message}`, { cause: err });
    }
    return new SqliteStore(join(stateDir, STORE_FILE), opts);
  }

  /**
   * Reads `<stateDir>/queue.db` without creating or changing anything (`doctor`): its schema
   * version, and SQLite's `PRAGMA quick_check` of every page, which a damaged file fails.
   */
  static inspect(stateDir: string): QueueFileReport {
    const file = join(stateDir, STORE_FILE);
    if (!existsSync(file)) return { state: "absent", file };
    let db: Database | undefined;
    try {
      db = new Database(file, { readonly: true, fileMustExist: true });
      const problems = db.pragma<{ quick_check: string }>("quick_check").map((r) => r.quick_check);
      if (problems.join() !== "ok") return { state: "damaged", file, problem: problems.slice(0, 3).join("; ") };
      const version = Number(
        (db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string } | undefined)?.value ?? 0,
      );
      if (version > SCHEMA_VERSION) return { state: "newer", file, version };
      const count = (sql: string) => (db!.prepare(sql).get() as { n: number }).n;
      return {
        state: "intact",
        file,
        waiting: count("SELECT count(*) AS n FROM events WHERE state = 'waiting'"),
        open: count("SELECT count(*) AS n FROM turns WHERE state IN ('queued', 'running')"),
      };
    } catch (err) {
      const code = String((err as { code?: unknown }).code ?? "");
      const message = (err as Error).message;
      if (code.startsWith("SQLITE_CORRUPT") || code === "SQLITE_NOTADB") return { state: "damaged", file, problem: message };
      return { state: "unreadable", file, error: message };
    } finally {
      db?.close();
    }
  }

  constructor(
    readonly file: string,
    opts: SqliteStoreOptions = {},
  ) {
    this.where = file;
    this.now = opts.now ?? Date.now;
    try {
      // The queue holds what members wrote: this user's alone (0600, its -wal and -shm too).
      privateSqliteFile(file);
      this.db = new Database(file);
      this.db.pragma("journal_mode = WAL");
      this.db.pragma("synchronous = NORMAL");
      this.patience = new LockPatience(this.db);
    } catch (err) {
      throw new QueueStoreError(`cannot open queue database ${file}: ${(err as Error).message}`, { cause: err });
    }
    this.migrate();
    this.stmt = this.prepare();
  }

  private migrate(): void {
    this.db.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    const row = this.db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string } | undefined;
    const found = row ? Number(row.value) : undefined;
    if (found !== undefined && found > SCHEMA_VERSION) {
      this.db.close();
      throw new QueueStoreError(
        `${this.file} was written by a newer buzz-bridge (schema version ${found}; this one understands up to ${SCHEMA_VERSION}). ` +
          `Upgrade buzz-bridge, or point state_dir at another directory.`,
      );
    }
    this.db.exec(DDL);
    // Added without a version bump: an older buzz-bridge reading this file ignores the column.
    const columns = (this.db.prepare("PRAGMA table_info(events)").all() as { name: string }[]).map((c) => c.name);
    if (!columns.includes("joined_after")) this.db.exec("ALTER TABLE events ADD COLUMN joined_after INTEGER");
    const turnColumns = (this.db.prepare("PRAGMA table_info(turns)").all() as { name: string }[]).map((c) => c.name);
    if (!turnColumns.includes("held_since")) this.db.exec("ALTER TABLE turns ADD COLUMN held_since INTEGER");
    // Written only when it changes: a daemon restarted on a full disk still opens its queue.
    if (found !== SCHEMA_VERSION)
      this.db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)").run(String(SCHEMA_VERSION));
  }

  private prepare() {
    const db = this.db;
    return this.patience.guard({
      insertEvent: db.prepare(
        "INSERT OR IGNORE INTO events (id, channel, scope, created_at, accepted_at, state, json) VALUES (?, ?, ?, ?, ?, 'waiting', ?)",
      ),
      countWaiting: db.prepare<[], { n: number }>("SELECT count(*) AS n FROM events WHERE state = 'waiting'"),
      countWaitingIn: db.prepare<[string], { n: number }>("SELECT count(*) AS n FROM events WHERE state = 'waiting' AND scope = ?"),
      oldestWaitingIn: db.prepare<[string, number], { id: string; json: string; created_at: number }>(
        "SELECT id, json, created_at FROM events WHERE state = 'waiting' AND scope = ? ORDER BY created_at, id LIMIT ?",
      ),
      getEvent: db.prepare<[string], EventRow>("SELECT * FROM events WHERE id = ?"),
      hasEvent: db.prepare("SELECT 1 FROM events WHERE id = ?"),
      setEventState: db.prepare("UPDATE events SET state = ?, turn_id = ? WHERE id = ?"),
      eventsOfTurn: db.prepare<[number], EventRow>("SELECT * FROM events WHERE turn_id = ? ORDER BY created_at, id"),
      bumpCursor: db.prepare(
        "INSERT INTO cursors (channel, created_at) VALUES (?, ?) ON CONFLICT(channel) DO UPDATE SET created_at = max(created_at, excluded.created_at)",
      ),
      cursor: db.prepare("SELECT created_at FROM cursors WHERE channel = ?"),
      minCursor: db.prepare("SELECT min(created_at) AS m FROM cursors"),
      claim: db.prepare<{ now: number; busy: string; limit: number }, { key: string }>(
        `WITH work AS (
           SELECT scope FROM events WHERE state = 'waiting'
           UNION SELECT scope FROM turns WHERE state = 'running' OR (state = 'queued' AND next_attempt_at <= :now))
         SELECT w.scope AS key,
           (SELECT min(e.created_at) FROM events e WHERE e.scope = w.scope AND e.state IN ('waiting', 'in_turn')) AS oldest,
           (SELECT min(e.accepted_at) FROM events e WHERE e.scope = w.scope AND e.state IN ('waiting', 'in_turn')) AS first_in
         FROM work w
         WHERE NOT EXISTS (SELECT 1 FROM turns q WHERE q.scope = w.scope AND q.state = 'queued' AND q.next_attempt_at > :now)
           AND w.scope NOT IN (SELECT value FROM json_each(:busy))
         ORDER BY oldest IS NULL, oldest, first_in, key LIMIT :limit`,
      ),
      nextDue: db.prepare<{ now: number; busy: string }, { at: number | null }>(
        `SELECT min(next_attempt_at) AS at FROM turns
         WHERE state = 'queued' AND next_attempt_at > :now AND scope NOT IN (SELECT value FROM json_each(:busy))`,
      ),
      openTurnOf: db.prepare<[string], TurnRow>(
        "SELECT * FROM turns WHERE scope = ? AND state IN ('queued', 'running') ORDER BY id LIMIT 1",
      ),
      insertTurn: db.prepare(
        "INSERT INTO turns (scope, channel, state, attempts, next_attempt_at, trigger_ids, updated_at) VALUES (?, ?, 'running', 1, 0, ?, ?)",
      ),
      getTurn: db.prepare<[number], TurnRow>("SELECT * FROM turns WHERE id = ?"),
      updateTurn: db.prepare(
        "UPDATE turns SET state = ?, attempts = ?, next_attempt_at = ?, recovered = ?, error = ?, updated_at = ?, held_since = coalesce(held_since, ?) WHERE id = ? AND state = ?",
      ),
      endEvents: db.prepare("UPDATE events SET state = ? WHERE turn_id = ?"),
      setJoined: db.prepare("UPDATE events SET joined_after = ? WHERE id = ?"),
      setTriggers: db.prepare("UPDATE turns SET trigger_ids = ?, updated_at = ? WHERE id = ?"),
      setEventJson: db.prepare("UPDATE events SET json = ? WHERE id = ?"),
      setReplies: db.prepare("UPDATE turns SET reply_ids = ?, updated_at = ? WHERE id = ?"),
      turnStates: db.prepare<[string], { id: number; state: TurnState }>(
        "SELECT id, state FROM turns WHERE id IN (SELECT value FROM json_each(?))",
      ),
      cancelWaitingIn: db.prepare(
        "UPDATE events SET state = 'cancelled' WHERE state = 'waiting' AND scope IN (SELECT value FROM json_each(?))",
      ),
      // A named parameter: the one value is used twice.
      cancelWaitingOfChannel: db.prepare<{ channel: string }>(
        "UPDATE events SET state = 'cancelled' WHERE state = 'waiting' AND (scope = @channel OR substr(scope, 1, length(@channel) + 1) = @channel || '/')",
      ),
      openTurnsIn: db.prepare<[string], { id: number; state: TurnState }>(
        "SELECT id, state FROM turns WHERE state IN ('queued', 'running') AND scope IN (SELECT value FROM json_each(?))",
      ),
      openTurnsOfChannel: db.prepare<{ channel: string }, { id: number; state: TurnState }>(
        "SELECT id, state FROM turns WHERE state IN ('queued', 'running') AND (scope = @channel OR substr(scope, 1, length(@channel) + 1) = @channel || '/')",
      ),
      cancelTurn: db.prepare("UPDATE turns SET state = 'cancelled', error = 'cancelled by owner', updated_at = ? WHERE id = ?"),
      claimControl: db.prepare("INSERT OR IGNORE INTO controls (id, created_at) VALUES (?, ?)"),
      claimOnce: db.prepare(
        "INSERT INTO claims (key, at) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET at = excluded.at WHERE claims.at <= ?",
      ),
      claimFirst: db.prepare("INSERT OR IGNORE INTO claims (key, at) VALUES (?, ?)"),
      hasClaim: db.prepare("SELECT 1 FROM claims WHERE key = ?"),
      markActive: db.prepare(
        "INSERT INTO claims (key, at) VALUES ('active:' || ?, ?) ON CONFLICT(key) DO UPDATE SET at = max(claims.at, excluded.at)",
      ),
      activeSince: db.prepare("SELECT substr(key, 8) AS key, at FROM claims WHERE substr(key, 1, 7) = 'active:' AND at >= ? ORDER BY at"),
      bumpRotation: db.prepare("INSERT INTO claims (key, at) VALUES ('rotate:' || ?, 1) ON CONFLICT(key) DO UPDATE SET at = claims.at + 1"),
      rotationEpoch: db.prepare<[string, string], { n: number | null }>(
        "SELECT sum(at) AS n FROM claims WHERE key IN ('rotate:' || ?, 'rotate:' || ?)",
      ),
      depthWaiting: db.prepare<[], { channel: string; n: number }>(
        "SELECT channel, count(*) AS n FROM events WHERE state = 'waiting' GROUP BY channel",
      ),
      depthRetrying: db.prepare<[], { channel: string; turns: number; n: number }>(
        `SELECT t.channel, count(DISTINCT t.id) AS turns, count(e.id) AS n FROM turns t LEFT JOIN events e ON e.turn_id = t.id
         WHERE t.state = 'queued' GROUP BY t.channel`,
      ),
      depthScopes: db.prepare<[], { scopes: number; running: number }>(
        `SELECT (SELECT count(*) FROM (SELECT scope FROM events WHERE state = 'waiting' UNION SELECT scope FROM turns WHERE state IN ('queued', 'running'))) AS scopes,
                (SELECT count(*) FROM turns WHERE state = 'running') AS running`,
      ),
      saveSession: db.prepare("INSERT OR REPLACE INTO sessions (scope, agent, session_id, updated_at) VALUES (?, ?, ?, ?)"),
      getSession: db.prepare("SELECT session_id FROM sessions WHERE scope = ? AND agent = ?"),
      forgetSession: db.prepare("DELETE FROM sessions WHERE scope = ?"),
      forgetChannelSessions: db.prepare("DELETE FROM sessions WHERE scope = ? OR substr(scope, 1, length(?) + 1) = ? || '/'"),
      recordAgentGroup: db.prepare("INSERT OR REPLACE INTO agent_groups (pgid, identity, started_at) VALUES (?, ?, ?)"),
      forgetAgentGroup: db.prepare("DELETE FROM agent_groups WHERE pgid = ?"),
      agentGroups: db.prepare("SELECT pgid, identity FROM agent_groups ORDER BY started_at"),
      pruneSessions: db.prepare("DELETE FROM sessions WHERE updated_at < ?"),
      pruneEvents: db.prepare(`DELETE FROM events WHERE state NOT IN ('waiting', 'in_turn') AND accepted_at < ?`),
      pruneTurns: db.prepare(`DELETE FROM turns WHERE state NOT IN ('queued', 'running') AND updated_at < ?`),
      pruneControls: db.prepare("DELETE FROM controls WHERE created_at < ?"),
      // Rotation counts are counters, not times: they stay.
      pruneClaims: db.prepare("DELETE FROM claims WHERE at < ? AND substr(key, 1, 7) <> 'rotate:'"),
    });
  }

  // ── The queue backend ──────────────────────────────────────────────────────────────

  async accept(ev: Event, channel: string, scope: string, caps: QueueCaps): Promise<Accepted> {
    return this.db.transaction((): Accepted => {
      if (this.stmt.insertEvent.run(ev.id, channel, scope, ev.created_at, Date.now(), JSON.stringify(ev)).changes === 0)
        return { fresh: false, refused: [] };
      // The newcomer counts itself: the queue is full when it would make one more than the cap.
      if (caps.total !== undefined && this.stmt.countWaiting.get()!.n > caps.total) {
        this.stmt.setEventState.run("refused", null, ev.id);
        return { fresh: true, refused: [{ id: ev.id, author: ev.pubkey, created_at: ev.created_at, reason: "queue-full" }] };
      }
      const over = this.stmt.countWaitingIn.get(scope)!.n - caps.scope;
      if (over <= 0) return { fresh: true, refused: [] };
      const refused = this.stmt.oldestWaitingIn.all(scope, over).map((r) => {
        this.stmt.setEventState.run("refused", null, r.id);
        return { id: r.id, author: (JSON.parse(r.json) as Event).pubkey, created_at: r.created_at, reason: "scope-cap" as const };
      });
      return { fresh: true, refused };
    });
  }

  async event(eventId: string): Promise<StoredEvent | undefined> {
    return this.eventNow(eventId);
  }

  async claim(_holder: string, limit: number, busy: readonly string[]): Promise<Claims> {
    const now = this.now();
    const args = { now, busy: JSON.stringify(busy) };
    const rows = limit > 0 ? this.stmt.claim.all({ ...args, limit }) : [];
    const next = this.stmt.nextDue.get(args)?.at;
    return {
      scopes: rows.map((r) => ({ key: r.key, channel: parseScopeKey(r.key).channel, from: null })),
      ...(next != null ? { nextDueInMs: next - now } : {}),
    };
  }

  /** The only daemon keeps every lease. */
  async renew(_daemon: DaemonInfo, held: readonly string[]): Promise<string[]> {
    return [...held];
  }

  async release(_holder: string, _key: string): Promise<void> {}

  async leave(_holder: string): Promise<void> {}

  async scopeWork(scope: string, batchSize: number): Promise<ScopeWork> {
    const t = this.stmt.openTurnOf.get(scope);
    if (t) return { turn: toTurn(t), due: t.state === "queued" ? t.next_attempt_at <= this.now() : undefined, waiting: [] };
    return { waiting: this.stmt.oldestWaitingIn.all(scope, batchSize).map((r) => r.id) };
  }

  async startTurn(scope: string, channel: string, eventIds: readonly string[]): Promise<number> {
    return this.db.transaction(() => {
      const ids = eventIds.filter((id) => this.eventNow(id)?.state === "waiting");
      const id = Number(this.stmt.insertTurn.run(scope, channel, JSON.stringify(ids), Date.now()).lastInsertRowid);
      for (const e of ids) this.stmt.setEventState.run("in_turn", id, e);
      return id;
    });
  }

  async turn(id: number): Promise<TurnRecord | undefined> {
    return this.turnNow(id);
  }

  async eventsOfTurn(turnId: number): Promise<StoredEvent[]> {
    return this.stmt.eventsOfTurn.all(turnId).map(toStored);
  }

  async updateTurn(from: TurnState, t: TurnUpdate, _holder: string): Promise<boolean> {
    return this.db.transaction(() => {
      const dueAt = t.state === "queued" ? this.now() + (t.retryInMs ?? 0) : 0;
      const r = this.stmt.updateTurn.run(
        t.state,
        t.attempts,
        dueAt,
        t.recovered ? 1 : 0,
        t.error,
        Date.now(),
        t.heldSince ?? null,
        t.id,
        from,
      );
      if (r.changes === 0) return false;
      if (FINAL.includes(t.state)) this.stmt.endEvents.run(t.state, t.id);
      return true;
    });
  }

  async recordReply(turnId: number, replyId: string, _holder?: string): Promise<void> {
    this.db.transaction(() => {
      const t = this.turnNow(turnId);
      if (!t || t.reply_ids.includes(replyId)) return;
      this.stmt.setReplies.run(JSON.stringify([...t.reply_ids, replyId]), Date.now(), turnId);
    });
  }

  async joinTurn(turnId: number, eventIds: readonly string[], _holder: string): Promise<string[]> {
    return this.db.transaction(() => {
      const t = this.turnNow(turnId);
      if (t?.state !== "running") return [];
      const ids = eventIds.filter((id, i) => {
        const e = this.eventNow(id);
        return e?.state === "waiting" && e.scope === t.scope && eventIds.indexOf(id) === i;
      });
      for (const e of ids) {
        this.stmt.setEventState.run("in_turn", turnId, e);
        this.stmt.setJoined.run(t.reply_ids.length, e);
      }
      if (ids.length) this.stmt.setTriggers.run(JSON.stringify([...t.trigger_ids, ...ids]), Date.now(), turnId);
      return ids;
    });
  }

  async leaveTurn(turnId: number, eventIds: readonly string[], _holder: string): Promise<void> {
    this.db.transaction(() => {
      const t = this.turnNow(turnId);
      if (!t) return;
      const ids = eventIds.filter((id) => this.eventNow(id)?.turn_id === turnId);
      for (const e of ids) {
        this.stmt.setEventState.run("waiting", null, e);
        this.stmt.setJoined.run(null, e);
      }
      if (ids.length) this.stmt.setTriggers.run(JSON.stringify(t.trigger_ids.filter((id) => !ids.includes(id))), Date.now(), turnId);
    });
  }

  async notRunning(turnIds: readonly number[]): Promise<number[]> {
    if (turnIds.length === 0) return [];
    return this.stmt.turnStates
      .all(JSON.stringify(turnIds))
      .filter((r) => r.state !== "running")
      .map((r) => r.id);
  }

  async cancelScopes(channel: string, keys: readonly string[] | undefined): Promise<{ running: number[]; ended: number }> {
    return this.db.transaction(() => {
      const events = keys
        ? this.stmt.cancelWaitingIn.run(JSON.stringify(keys)).changes
        : this.stmt.cancelWaitingOfChannel.run({ channel }).changes;
      const turns = keys ? this.stmt.openTurnsIn.all(JSON.stringify(keys)) : this.stmt.openTurnsOfChannel.all({ channel });
      for (const t of turns) {
        this.stmt.cancelTurn.run(Date.now(), t.id);
        this.stmt.endEvents.run("cancelled", t.id);
      }
      return { running: turns.filter((t) => t.state === "running").map((t) => t.id), ended: events + turns.length };
    });
  }

  async bumpRotation(key: string): Promise<void> {
    this.stmt.bumpRotation.run(key);
  }

  async rotationEpoch(scope: string, channel: string): Promise<number> {
    return this.stmt.rotationEpoch.get(scope, channel)?.n ?? 0;
  }

  async replaceQueuedContent(eventId: string, content: string, editId: string): Promise<boolean> {
    return this.db.transaction(() => {
      const e = this.eventNow(eventId);
      const queued =
        e?.state === "waiting" || (e?.state === "in_turn" && e.turn_id !== null && this.turnNow(e.turn_id)?.state === "queued");
      if (!e || !queued) return false;
      this.stmt.setEventJson.run(JSON.stringify({ ...e.event, content, edited: editId }), eventId);
      return true;
    });
  }

  async dropWaiting(eventId: string): Promise<boolean> {
    return this.db.transaction(() => {
      if (this.eventNow(eventId)?.state !== "waiting") return false;
      this.stmt.setEventState.run("deleted", null, eventId);
      return true;
    });
  }

  async claimControl(eventId: string, createdAt: number): Promise<boolean> {
    return this.stmt.claimControl.run(eventId, createdAt).changes > 0;
  }

  async claimOnce(key: string, windowMs: number): Promise<boolean> {
    const now = Date.now();
    return this.stmt.claimOnce.run(key, now, now - windowMs).changes > 0;
  }

  async claimFirst(keys: readonly string[]): Promise<string[]> {
    const now = Date.now();
    return this.db.transaction(() => keys.filter((k) => this.stmt.claimFirst.run(k, now).changes > 0));
  }

  /** One daemon: every period is its own. */
  async claimPeriod(_name: string, _periodMs: number): Promise<boolean> {
    return true;
  }

  async markActive(key: string, at: number): Promise<void> {
    this.stmt.markActive.run(key, at);
  }

  async activeSince(sinceMs: number): Promise<{ key: string; at: number }[]> {
    return this.stmt.activeSince.all(sinceMs) as { key: string; at: number }[];
  }

  async depth(): Promise<QueueDepth> {
    const byChannel = new Map<string, number>();
    let queued = 0;
    let retrying = 0;
    for (const r of this.stmt.depthWaiting.all()) {
      byChannel.set(r.channel, r.n);
      queued += r.n;
    }
    for (const r of this.stmt.depthRetrying.all()) {
      byChannel.set(r.channel, (byChannel.get(r.channel) ?? 0) + r.n);
      queued += r.n;
      retrying += r.turns;
    }
    const { scopes, running } = this.stmt.depthScopes.get()!;
    return { queued, retrying, running, scopes, byChannel };
  }

  async prune(olderThanMs: number, now = Date.now()): Promise<void> {
    this.pruneNow(olderThanMs, now);
  }

  async close(): Promise<void> {
    this.closeNow();
  }

  // ── This machine's own state (synchronous) ──────────────────────────────────────────

  /** Records that the gate saw an event of this channel, for `since` on reconnect (docs/protocol.md §5). */
  noteSeen(channel: string, createdAt: number): void {
    this.stmt.bumpCursor.run(channel, createdAt);
  }

  cursor(channel: string): number | undefined {
    return (this.stmt.cursor.get(channel) as { created_at: number } | undefined)?.created_at;
  }

  /** The oldest of all channel cursors: one `since` for the single REQ (docs/protocol.md §5). */
  minCursor(): number | undefined {
    return (this.stmt.minCursor.get() as { m: number | null }).m ?? undefined;
  }

  /**
   * This daemon's gate accepted the event (noted in the tick it arrives, before the queue
   * has stored it): an edit or deletion of it right behind is an amendment.
   */
  markAccepted(eventId: string): void {
    this.stmt.claimFirst.run(`accepted:${eventId}`, Date.now());
  }

  /** Noted by markAccepted, or (a single daemon's queue, also from before markAccepted existed) stored in the queue here. */
  isAccepted(eventId: string): boolean {
    return this.stmt.hasClaim.get(`accepted:${eventId}`) !== undefined || this.stmt.hasEvent.get(eventId) !== undefined;
  }

  /** True the first time this daemon denies the event: a relay replay after a restart is not reported twice. */
  markDenied(eventId: string): boolean {
    return this.stmt.claimFirst.run(`denied-event:${eventId}`, Date.now()).changes > 0;
  }

  /**
   * The agent session a scope last used, so a restart can reopen it (ACP session/resume or
   * session/load) instead of starting the conversation over. Keyed by the agent command
   * too: another agent's session ids mean nothing to this one.
   */
  saveSession(scope: string, agent: string, sessionId: string): void {
    this.stmt.saveSession.run(scope, agent, sessionId, Date.now());
  }

  session(scope: string, agent: string): string | undefined {
    return (this.stmt.getSession.get(scope, agent) as { session_id: string } | undefined)?.session_id;
  }

  forgetSession(scope: string): void {
    this.stmt.forgetSession.run(scope);
  }

  /** Forgets the channel scope and every thread scope of the channel. */
  forgetChannelSessions(channel: string): void {
    this.stmt.forgetChannelSessions.run(channel, channel, channel);
  }

  /**
   * Agent process groups this daemon started and has not seen exit: what a SIGKILL of the
   * daemon leaves behind. `identity` tells a leftover from a new process that reused the id.
   */
  recordAgentGroup(pgid: number, identity: string): void {
    this.stmt.recordAgentGroup.run(pgid, identity, Date.now());
  }

  forgetAgentGroup(pgid: number): void {
    this.stmt.forgetAgentGroup.run(pgid);
  }

  /**
   * Notes whose state this is (the agent's pubkey, meta `identity`): a team started on this
   * state directory later takes the file over for that agent (app/daemon/team-state.ts).
   * Written only when it changes, and a note the store cannot take now (a full disk, a lock)
   * is left for a later start: it must never keep the daemon from starting.
   */
  noteIdentity(pubkey: string): void {
    try {
      const noted = this.db.prepare("SELECT value FROM meta WHERE key = 'identity'").get() as { value: string } | undefined;
      if (noted?.value !== pubkey) this.db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('identity', ?)").run(pubkey);
    } catch (err) {
      if (!storeUnavailable(err)) throw err;
    }
  }

  /**
   * The identity `<stateDir>/queue.db` was last used by (noteIdentity); undefined when absent
   * or not noted. Opened for writing, so closing it folds a crashed daemon's WAL into the
   * file (the caller holds the state lock: nobody else has it open).
   */
  static identityIn(stateDir: string): string | undefined {
    const file = join(stateDir, STORE_FILE);
    if (!existsSync(file)) return undefined;
    const db = new Database(file, { fileMustExist: true });
    try {
      return (db.prepare("SELECT value FROM meta WHERE key = 'identity'").get() as { value: string } | undefined)?.value;
    } finally {
      db.close();
    }
  }

  agentGroups(): Array<{ pgid: number; identity: string }> {
    return this.stmt.agentGroups.all() as Array<{ pgid: number; identity: string }>;
  }

  /** Deletes finished rows older than `olderThanMs` (STATE_RETENTION_MS); open work is never pruned. */
  pruneNow(olderThanMs: number, now = Date.now()): void {
    const cutoff = now - olderThanMs;
    this.db.transaction(() => {
      this.stmt.pruneSessions.run(cutoff);
      this.stmt.pruneEvents.run(cutoff);
      this.stmt.pruneTurns.run(cutoff);
      this.stmt.pruneControls.run(Math.floor(cutoff / 1000));
      this.stmt.pruneClaims.run(cutoff);
    });
  }

  closeNow(): void {
    if (this.db.open) this.db.close();
  }

  private eventNow(eventId: string): StoredEvent | undefined {
    const row = this.stmt.getEvent.get(eventId);
    return row ? toStored(row) : undefined;
  }

  private turnNow(id: number): TurnRecord | undefined {
    const row = this.stmt.getTurn.get(id);
    return row ? toTurn(row) : undefined;
  }
}

function toStored(row: EventRow): StoredEvent {
  const { json, ...rest } = row;
  return { ...rest, event: JSON.parse(json) as Event };
}

function toTurn(row: TurnRow): TurnRecord {
  return {
    ...row,
    reply_ids: JSON.parse(row.reply_ids) as string[],
    trigger_ids: JSON.parse(row.trigger_ids) as string[],
    recovered: row.recovered === 1,
  };
}
