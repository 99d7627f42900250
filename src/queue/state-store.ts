/**
 * The durable state's operations, as the queue, the dispatcher and the gate need them,
 * behind one asynchronous interface with two implementations: SQLite (one daemon, a file
 * under `state_dir`; `SqliteStateStore`) and PostgreSQL (a fleet of daemons sharing one
 * database; `PostgresStore`). Asynchronous because a network database is: the SQLite
 * implementation simply resolves at once.
 *
 * Every operation that changes more than one row is atomic in both implementations.
 */
import type { Event } from "nostr-tools";
import type { EventState, StoredEvent, TurnRecord } from "./store.js";

type StateBackend = "sqlite" | "postgres";

/** Finished events, turns and idle sessions are forgotten after a week; unfinished work never is. */
export const STATE_RETENTION_MS = 7 * 86_400_000;

export type TurnUpdate = Pick<TurnRecord, "id" | "state" | "attempts" | "next_attempt_at" | "recovered" | "error">;

export interface StateStore {
  readonly backend: StateBackend;
  /** Where the state lives, safe to show: a file path, or the database URL without its password. */
  readonly where: string;

  /** Records an accepted event (waiting) and advances its channel's cursor; false for a known id. */
  accept(ev: Event, channel: string, scope: string): Promise<boolean>;
  has(eventId: string): Promise<boolean>;
  event(eventId: string): Promise<StoredEvent | undefined>;
  setEventStates(ids: readonly string[], state: EventState, turnId?: number | null): Promise<void>;
  /** Events waiting for a turn, oldest first. */
  waitingEvents(): Promise<StoredEvent[]>;
  eventsOfTurn(turnId: number): Promise<StoredEvent[]>;

  noteSeen(channel: string, createdAt: number): Promise<void>;
  cursor(channel: string): Promise<number | undefined>;
  minCursor(): Promise<number | undefined>;

  /** Creates a running turn over `eventIds` and marks them in_turn, atomically. */
  startTurn(scope: string, channel: string, eventIds: readonly string[]): Promise<number>;
  turn(id: number): Promise<TurnRecord | undefined>;
  /** Turns queued for retry or running. */
  openTurns(): Promise<TurnRecord[]>;
  /** Final states carry over to the turn's events in the same transaction. */
  updateTurn(t: TurnUpdate): Promise<void>;
  /** Remembers an event published for a turn; idempotent. */
  recordReply(turnId: number, replyId: string): Promise<void>;

  /**
   * Mid-turn messages join a running turn (docs/architecture.md §3): those of `eventIds`
   * still waiting in the turn's scope become in_turn there and triggers of the turn, at
   * once, before the agent is given them. In a fleet only while `holder` holds the
   * scope's lease. Returns the ids that joined.
   */
  joinTurn(turnId: number, eventIds: readonly string[], holder?: string): Promise<string[]>;
  /** The reverse of joinTurn, for messages the turn could not take (fenced the same way). */
  leaveTurn(turnId: number, eventIds: readonly string[], holder?: string): Promise<void>;
  /**
   * An edit replaces an accepted event's text while no agent has been given it yet: it is
   * waiting, or in a turn queued for a retry. False otherwise (its turn runs, or ended).
   */
  replaceQueuedContent(eventId: string, content: string, editId: string): Promise<boolean>;
  /** Its author deleted a waiting event: deleted, if it is still waiting. */
  dropWaiting(eventId: string): Promise<boolean>;

  /** True the first time a control command's event id is claimed (across the fleet). */
  claimControl(eventId: string, createdAt: number): Promise<boolean>;
  /**
   * True when `key` was not claimed within the last `windowMs` (then it is claimed now):
   * answers that go out at most once per window, such as 🔒 to a stranger, are decided
   * here so that a fleet gives them once, not once per daemon.
   */
  claimOnce(key: string, windowMs: number): Promise<boolean>;

  /**
   * The conversations the agent is in (gate/participation.ts): `key` is `thread:<root>` or
   * `channel:<id>`, `at` its last activity (unix ms); a later time replaces an earlier one,
   * never the reverse. Kept so that a restart, or another daemon of the fleet, starts with
   * the set; pruned with the claims.
   */
  markActive(key: string, at: number): Promise<void>;
  /** The conversations active since `sinceMs` (unix ms). */
  activeSince(sinceMs: number): Promise<{ key: string; at: number }[]>;

  saveSession(scope: string, agent: string, sessionId: string): Promise<void>;
  session(scope: string, agent: string): Promise<string | undefined>;
  forgetSession(scope: string): Promise<void>;
  forgetChannelSessions(channel: string): Promise<void>;

  /** Deletes finished rows older than `olderThanMs`; open work is never pruned. */
  prune(olderThanMs: number, now?: number): Promise<void>;
  close(): Promise<void>;
}
