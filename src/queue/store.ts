/**
 * The durable queue (docs/architecture.md §3): SQLite in WAL mode under `state_dir`. An accepted event
 * is written here before anything else happens, so a crash between acceptance and the
 * end of its turn loses nothing; on restart the scheduler reloads what is unfinished.
 *
 * Durability: `synchronous = NORMAL` with WAL keeps every committed transaction across a
 * process crash (SIGKILL, OOM); only an OS crash or power loss can lose the last commits.
 * FULL would fsync each accepted mention, which costs more than a burst can afford.
 */
import Database from "better-sqlite3";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { QueueStoreError } from "./errors.js";
import { privateSqliteFile } from "../base/private-file.js";

export const SCHEMA_VERSION = 1;
export const STORE_FILE = "queue.db";

/**
 * Life of an accepted event: waiting → in_turn → done | failed | cancelled, or refused (cap),
 * or deleted (its author deleted it before its turn started). A mid-turn message goes from
 * waiting straight into the running turn (joinTurn), or back to waiting (leaveTurn).
 */
export type EventState = "waiting" | "in_turn" | "done" | "failed" | "cancelled" | "refused" | "deleted";
type TurnState = "queued" | "running" | "done" | "failed" | "cancelled";

export interface StoredEvent {
  id: string;
  channel: string;
  scope: string;
  created_at: number;
  state: EventState;
  turn_id: number | null;
  /**
   * For a message that joined a running turn (a mid-turn steer): how many replies the turn
   * had published when it joined. A restart replays it unless a reply came after that.
   */
  joined_after: number | null;
  event: Event;
}

export interface TurnRecord {
  id: number;
  scope: string;
  channel: string;
  state: TurnState;
  attempts: number;
  /** Unix ms; for queued turns the earliest time they may run again. */
  next_attempt_at: number;
  /** Events this bridge published for the turn, so a retried turn does not publish twice. */
  reply_ids: string[];
  trigger_ids: string[];
  /** 1 when the turn was running at a restart: it is retried once, then fails for good. */
  recovered: number;
  error: string | null;
}

interface TurnRow extends Omit<TurnRecord, "reply_ids" | "trigger_ids"> {
  reply_ids: string;
  trigger_ids: string;
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
  updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS turns_open ON turns (state);
CREATE TABLE IF NOT EXISTS cursors (channel TEXT PRIMARY KEY, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS controls (id TEXT PRIMARY KEY, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (scope TEXT PRIMARY KEY, agent TEXT NOT NULL, session_id TEXT NOT NULL, updated_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS agent_groups (pgid INTEGER PRIMARY KEY, identity TEXT NOT NULL, started_at INTEGER NOT NULL);
`;

export class QueueStore {
  readonly file: string;
  private readonly db: Database.Database;
  private readonly stmt: ReturnType<QueueStore["prepare"]>;

  /** Opens (creating if needed) `<stateDir>/queue.db`. */
  static open(stateDir: string): QueueStore {
    try {
      mkdirSync(stateDir, { recursive: true });
    } catch (err) {
      throw new QueueStoreError(`cannot create state_dir ${stateDir}: ${(err as Error).message}`, { cause: err });
    }
    return new QueueStore(join(stateDir, STORE_FILE));
  }

  constructor(file: string) {
    this.file = file;
    try {
      // The queue holds what members wrote: this user's alone (0600, its -wal and -shm too).
      privateSqliteFile(file);
      this.db = new Database(file);
      this.db.pragma("journal_mode = WAL");
      this.db.pragma("synchronous = NORMAL");
      this.db.pragma("busy_timeout = 5000");
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
    this.db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)").run(String(SCHEMA_VERSION));
  }

  private prepare() {
    const db = this.db;
    return {
      insertEvent: db.prepare(
        "INSERT OR IGNORE INTO events (id, channel, scope, created_at, accepted_at, state, json) VALUES (?, ?, ?, ?, ?, 'waiting', ?)",
      ),
      hasEvent: db.prepare("SELECT 1 FROM events WHERE id = ?"),
      getEvent: db.prepare("SELECT * FROM events WHERE id = ?"),
      setEventState: db.prepare("UPDATE events SET state = ?, turn_id = ? WHERE id = ?"),
      eventsOfTurn: db.prepare("SELECT * FROM events WHERE turn_id = ? ORDER BY created_at, id"),
      openEvents: db.prepare(`SELECT * FROM events WHERE state IN ('waiting') ORDER BY created_at, id`),
      bumpCursor: db.prepare(
        "INSERT INTO cursors (channel, created_at) VALUES (?, ?) ON CONFLICT(channel) DO UPDATE SET created_at = max(created_at, excluded.created_at)",
      ),
      cursor: db.prepare("SELECT created_at FROM cursors WHERE channel = ?"),
      minCursor: db.prepare("SELECT min(created_at) AS m FROM cursors"),
      insertTurn: db.prepare(
        "INSERT INTO turns (scope, channel, state, attempts, next_attempt_at, trigger_ids, updated_at) VALUES (?, ?, 'running', 1, 0, ?, ?)",
      ),
      getTurn: db.prepare("SELECT * FROM turns WHERE id = ?"),
      updateTurn: db.prepare(
        "UPDATE turns SET state = ?, attempts = ?, next_attempt_at = ?, recovered = ?, error = ?, updated_at = ? WHERE id = ?",
      ),
      setJoined: db.prepare("UPDATE events SET joined_after = ? WHERE id = ?"),
      setTriggers: db.prepare("UPDATE turns SET trigger_ids = ?, updated_at = ? WHERE id = ?"),
      setEventJson: db.prepare("UPDATE events SET json = ? WHERE id = ?"),
      setReplies: db.prepare("UPDATE turns SET reply_ids = ?, updated_at = ? WHERE id = ?"),
      openTurns: db.prepare("SELECT * FROM turns WHERE state IN ('queued', 'running') ORDER BY id"),
      claimControl: db.prepare("INSERT OR IGNORE INTO controls (id, created_at) VALUES (?, ?)"),
      pruneControls: db.prepare("DELETE FROM controls WHERE created_at < ?"),
      claimOnce: db.prepare(
        "INSERT INTO claims (key, at) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET at = excluded.at WHERE claims.at <= ?",
      ),
      pruneClaims: db.prepare("DELETE FROM claims WHERE at < ?"),
      hasClaim: db.prepare("SELECT 1 FROM claims WHERE key = ?"),
      markActive: db.prepare(
        "INSERT INTO claims (key, at) VALUES ('active:' || ?, ?) ON CONFLICT(key) DO UPDATE SET at = max(claims.at, excluded.at)",
      ),
      activeSince: db.prepare("SELECT substr(key, 8) AS key, at FROM claims WHERE substr(key, 1, 7) = 'active:' AND at >= ? ORDER BY at"),
      pruneEvents: db.prepare(`DELETE FROM events WHERE state NOT IN ('waiting', 'in_turn') AND accepted_at < ?`),
      saveSession: db.prepare("INSERT OR REPLACE INTO sessions (scope, agent, session_id, updated_at) VALUES (?, ?, ?, ?)"),
      getSession: db.prepare("SELECT session_id FROM sessions WHERE scope = ? AND agent = ?"),
      forgetSession: db.prepare("DELETE FROM sessions WHERE scope = ?"),
      forgetChannelSessions: db.prepare("DELETE FROM sessions WHERE scope = ? OR substr(scope, 1, length(?) + 1) = ? || '/'"),
      pruneSessions: db.prepare("DELETE FROM sessions WHERE updated_at < ?"),
      recordAgentGroup: db.prepare("INSERT OR REPLACE INTO agent_groups (pgid, identity, started_at) VALUES (?, ?, ?)"),
      forgetAgentGroup: db.prepare("DELETE FROM agent_groups WHERE pgid = ?"),
      agentGroups: db.prepare("SELECT pgid, identity FROM agent_groups ORDER BY started_at"),
      pruneTurns: db.prepare(`DELETE FROM turns WHERE state NOT IN ('queued', 'running') AND updated_at < ?`),
    };
  }

  /**
   * Records an accepted event (state waiting) and advances its channel's cursor, in one
   * transaction. Returns false for a duplicate id: the event is already known.
   */
  accept(ev: Event, channel: string, scope: string): boolean {
    const tx = this.db.transaction(() => {
      const res = this.stmt.insertEvent.run(ev.id, channel, scope, ev.created_at, Date.now(), JSON.stringify(ev));
      this.stmt.bumpCursor.run(channel, ev.created_at);
      return res.changes > 0;
    });
    return tx();
  }

  has(eventId: string): boolean {
    return this.stmt.hasEvent.get(eventId) !== undefined;
  }

  event(eventId: string): StoredEvent | undefined {
    const row = this.stmt.getEvent.get(eventId) as (Omit<StoredEvent, "event"> & { json: string }) | undefined;
    return row ? toStored(row) : undefined;
  }

  /** Marks events in one transaction (refused by the cap, cancelled, done, …). */
  setEventStates(ids: readonly string[], state: EventState, turnId: number | null = null): void {
    const tx = this.db.transaction(() => {
      for (const id of ids) this.stmt.setEventState.run(state, turnId, id);
    });
    tx();
  }

  /** Events waiting for a turn, oldest first (restart recovery). */
  waitingEvents(): StoredEvent[] {
    return (this.stmt.openEvents.all() as (Omit<StoredEvent, "event"> & { json: string })[]).map(toStored);
  }

  eventsOfTurn(turnId: number): StoredEvent[] {
    return (this.stmt.eventsOfTurn.all(turnId) as (Omit<StoredEvent, "event"> & { json: string })[]).map(toStored);
  }

  /** Records that the gate saw an event of this channel (denied ones too), for `since` on reconnect. */
  noteSeen(channel: string, createdAt: number): void {
    this.stmt.bumpCursor.run(channel, createdAt);
  }

  /** Last handled `created_at` of the channel; undefined when nothing was seen there yet. */
  cursor(channel: string): number | undefined {
    return (this.stmt.cursor.get(channel) as { created_at: number } | undefined)?.created_at;
  }

  /** The oldest of all channel cursors: one `since` for the single REQ (docs/protocol.md §5). */
  minCursor(): number | undefined {
    const m = (this.stmt.minCursor.get() as { m: number | null }).m;
    return m ?? undefined;
  }

  /** Creates a running turn over `eventIds` and marks them in_turn, atomically. */
  startTurn(scope: string, channel: string, eventIds: readonly string[]): number {
    const tx = this.db.transaction(() => {
      const res = this.stmt.insertTurn.run(scope, channel, JSON.stringify(eventIds), Date.now());
      const id = Number(res.lastInsertRowid);
      for (const e of eventIds) this.stmt.setEventState.run("in_turn", id, e);
      return id;
    });
    return tx();
  }

  /**
   * A mid-turn message joins a running turn: its events become in_turn there and triggers
   * of the turn, in one transaction, before the agent is given them (a restart replays the
   * turn with them, once).
   */
  joinTurn(turnId: number, eventIds: readonly string[]): void {
    const tx = this.db.transaction(() => {
      const t = this.turn(turnId);
      if (!t) return;
      for (const e of eventIds) {
        this.stmt.setEventState.run("in_turn", turnId, e);
        this.stmt.setJoined.run(t.reply_ids.length, e);
      }
      const triggers = [...t.trigger_ids, ...eventIds.filter((e) => !t.trigger_ids.includes(e))];
      this.stmt.setTriggers.run(JSON.stringify(triggers), Date.now(), turnId);
    });
    tx();
  }

  /** The reverse of joinTurn: the events wait for a turn of their own again. */
  leaveTurn(turnId: number, eventIds: readonly string[]): void {
    const tx = this.db.transaction(() => {
      const t = this.turn(turnId);
      if (!t) return;
      for (const e of eventIds) {
        this.stmt.setEventState.run("waiting", null, e);
        this.stmt.setJoined.run(null, e);
      }
      this.stmt.setTriggers.run(JSON.stringify(t.trigger_ids.filter((id) => !eventIds.includes(id))), Date.now(), turnId);
    });
    tx();
  }

  /**
   * An edit replaced a stored event's text; everything else about it (id, scope, time)
   * stays, and `edited` names the edit (the prompt says the text was corrected).
   */
  replaceContent(eventId: string, content: string, editId: string): boolean {
    const e = this.event(eventId);
    if (!e) return false;
    this.stmt.setEventJson.run(JSON.stringify({ ...e.event, content, edited: editId }), eventId);
    return true;
  }

  turn(id: number): TurnRecord | undefined {
    const row = this.stmt.getTurn.get(id) as TurnRow | undefined;
    return row ? toTurn(row) : undefined;
  }

  /** Turns queued for retry or running when the process stopped. */
  openTurns(): TurnRecord[] {
    return (this.stmt.openTurns.all() as TurnRow[]).map(toTurn);
  }

  /**
   * Updates a turn; for final states its events get the matching final state in the same
   * transaction, so an event never outlives its turn in an open state.
   */
  updateTurn(t: Pick<TurnRecord, "id" | "state" | "attempts" | "next_attempt_at" | "recovered" | "error">): void {
    const tx = this.db.transaction(() => {
      this.stmt.updateTurn.run(t.state, t.attempts, t.next_attempt_at, t.recovered, t.error, Date.now(), t.id);
      if (t.state === "done" || t.state === "failed" || t.state === "cancelled") {
        for (const e of this.stmt.eventsOfTurn.all(t.id) as { id: string }[]) this.stmt.setEventState.run(t.state, t.id, e.id);
      }
    });
    tx();
  }

  /** Remembers an event published for a turn (reply, fallback, notice). */
  recordReply(turnId: number, replyId: string): void {
    const t = this.turn(turnId);
    if (!t || t.reply_ids.includes(replyId)) return;
    this.stmt.setReplies.run(JSON.stringify([...t.reply_ids, replyId]), Date.now(), turnId);
  }

  /** True the first time a control command's event id is claimed. */
  claimControl(eventId: string, createdAt: number): boolean {
    return this.stmt.claimControl.run(eventId, createdAt).changes > 0;
  }

  /** True when `key` was not claimed within the last `windowMs`; claims it now. */
  claimOnce(key: string, windowMs: number, now = Date.now()): boolean {
    return this.stmt.claimOnce.run(key, now, now - windowMs).changes > 0;
  }

  /** Whether `key` was ever claimed (and not pruned yet). */
  hasClaim(key: string): boolean {
    return this.stmt.hasClaim.get(key) !== undefined;
  }

  /** A conversation the agent is in (state-store.ts `markActive`), kept among the claims as `active:<key>`. */
  markActive(key: string, at: number): void {
    this.stmt.markActive.run(key, at);
  }

  activeSince(sinceMs: number): { key: string; at: number }[] {
    return this.stmt.activeSince.all(sinceMs) as { key: string; at: number }[];
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

  agentGroups(): Array<{ pgid: number; identity: string }> {
    return this.stmt.agentGroups.all() as Array<{ pgid: number; identity: string }>;
  }

  /** Forgets the channel scope and every thread scope of the channel. */
  forgetChannelSessions(channel: string): void {
    this.stmt.forgetChannelSessions.run(channel, channel, channel);
  }

  /** Deletes finished rows older than `olderThanMs` (STATE_RETENTION_MS); open work is never pruned. */
  prune(olderThanMs: number, now = Date.now()): void {
    const cutoff = now - olderThanMs;
    this.stmt.pruneSessions.run(cutoff);
    this.stmt.pruneEvents.run(cutoff);
    this.stmt.pruneTurns.run(cutoff);
    this.stmt.pruneControls.run(Math.floor(cutoff / 1000));
    this.stmt.pruneClaims.run(cutoff);
  }

  /** Runs `fn` in one transaction (used by the scheduler to batch state changes). */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

function toStored(row: Omit<StoredEvent, "event"> & { json: string }): StoredEvent {
  const { json, ...rest } = row;
  return { ...rest, event: JSON.parse(json) as Event };
}

function toTurn(row: TurnRow): TurnRecord {
  return { ...row, reply_ids: JSON.parse(row.reply_ids) as string[], trigger_ids: JSON.parse(row.trigger_ids) as string[] };
}
