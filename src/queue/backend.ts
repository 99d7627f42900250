/**
 * The queue's backend (docs/architecture.md §3, §5): what the one `Scheduler` needs of
 * durable state, behind one asynchronous interface with two implementations.
 *
 * - `SqliteStore` (sqlite-store.ts): one daemon, a file under `state_dir`. The state lock
 *   (app/daemon/state-lock.ts) already guarantees that no other daemon uses the file, so
 *   leases are always held: a claim takes every scope with work, renewing and releasing
 *   change nothing, and a fenced write is a plain write (`leaseMs` is Infinity).
 * - `PostgresStore` (pg-store.ts): the daemons of one identity sharing a database (a fleet).
 *   A scope's turns run on the daemon that holds its lease (pg-leases.ts), and the writes
 *   only that daemon may make are fenced by the lease: refused once another daemon took
 *   the scope over.
 *
 * Asynchronous because a network database is. The SQLite implementation answers at once
 * (its SQLite is synchronous), so a single daemon pays a microtask, not a round trip.
 * Every operation that changes more than one row is atomic in both. Times the backend
 * compares (a retry's due time, a lease's expiry) are on the backend's own clock: the
 * database's for PostgreSQL, so daemons whose clocks drift agree on them.
 */
import type { Event } from "nostr-tools";
import type { RefusalReason, RefusedEvent } from "./refusals.js";

/** Finished events, turns and idle sessions are forgotten after a week; unfinished work never is. */
export const STATE_RETENTION_MS = 7 * 86_400_000;

/**
 * Life of an accepted event: waiting → in_turn → done | failed | cancelled, or refused (a
 * cap), or deleted (its author deleted it before its turn started). A mid-turn message goes
 * from waiting straight into the running turn (joinTurn), or back to waiting (leaveTurn).
 */
export type EventState = "waiting" | "in_turn" | "done" | "failed" | "cancelled" | "refused" | "deleted";
/** Life of a turn: running ⇄ queued (a retry waiting for its due time) → done | failed | cancelled. */
export type TurnState = "queued" | "running" | "done" | "failed" | "cancelled";

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
  /** Attempts started, the first included. */
  attempts: number;
  /** Unix ms on the backend's clock; for a queued turn the earliest time it may run again. */
  next_attempt_at: number;
  /** Events published for the turn (recorded before each is sent), so a retry does not publish twice. */
  reply_ids: string[];
  trigger_ids: string[];
  /** The turn was left running by a daemon that stopped: this attempt is its recovery. */
  recovered: boolean;
  error: string | null;
  /**
   * Unix ms, by the daemon's clock, when a provider's limit first held the turn (Scheduler.hold);
   * null while it never was. Kept across its holds, retries and restarts: `queue.hold_max` bounds
   * the holds together.
   */
  held_since: number | null;
}

/** A turn's new state. `retryInMs` (queued only): due that long from now by the backend's clock; otherwise due at once. */
export interface TurnUpdate {
  id: number;
  state: TurnState;
  attempts: number;
  recovered: boolean;
  error: string | null;
  retryInMs?: number;
  /** The turn's first hold (TurnRecord.held_since): written once, kept by every later update. */
  heldSince?: number;
}

/**
 * Waiting events allowed per scope and in all; past them the oldest of a scope, or the
 * newcomer, are refused. `total` undefined: the caller knows the queue is far from full,
 * and the backend spares itself counting every waiting event.
 */
export interface QueueCaps {
  scope: number;
  total?: number;
}

export interface Accepted {
  /** False for an id the queue knows already (a relay replay, or another daemon of the fleet was first). */
  fresh: boolean;
  /** Events the caps refused because of this one (the newcomer itself when the queue is full), each once. */
  refused: Array<RefusedEvent & { reason: RefusalReason }>;
}

/** The daemon holding leases, as the fleet lists it (doctor, /status). */
export interface DaemonInfo {
  id: string;
  host: string;
  pid: number;
  maxConcurrent: number;
}

export interface ClaimedScope {
  key: string;
  channel: string;
  /** The daemon whose expired lease this replaces; null for a scope nobody else held. */
  from: string | null;
}

export interface Claims {
  /** At most the limit asked for, the scope with the oldest waiting work first. */
  scopes: ClaimedScope[];
  /** When the earliest retry not yet due comes due, in ms from now (the backend's clock). */
  nextDueInMs?: number;
}

/** A held scope's next work: its open turn (a due retry, or one left running) if any, else its oldest waiting events. */
export interface ScopeWork {
  turn?: TurnRecord;
  /** For a queued turn: whether its retry is due. */
  due?: boolean;
  waiting: string[];
}

export interface QueueDepth {
  /** Events waiting for a turn, those of turns queued for a retry included. */
  queued: number;
  /** Turns queued for a retry. */
  retrying: number;
  /** Turns running (on whichever daemon; at start, those left running by a daemon that stopped). */
  running: number;
  /** Scopes with waiting events or an open turn. */
  scopes: number;
  /** `queued` per channel. */
  byChannel: Map<string, number>;
}

export interface QueueBackend {
  /** Where the state lives, safe to show: a file path, or the database URL without its password. */
  readonly where: string;
  /**
   * How long a lease lasts unless renewed. Infinity: leases never expire, because no other
   * daemon shares the queue; the scheduler then never renews, and never looks for work that
   * did not arrive through it.
   */
  readonly leaseMs: number;

  // Arrivals.
  /**
   * Stores an accepted event (waiting), unique by id, and applies the caps in the same
   * step: past `caps.total` waiting events the newcomer is stored refused; past `caps.scope`
   * in its scope the oldest waiting ones are.
   */
  accept(ev: Event, channel: string, scope: string, caps: QueueCaps): Promise<Accepted>;
  event(eventId: string): Promise<StoredEvent | undefined>;

  // Scope leases.
  /**
   * Takes up to `limit` scopes with work that `holder` may run now (nobody else holds them,
   * or their lease expired), oldest waiting work first — by `created_at`, and within one
   * second (its resolution) in the order the events were accepted, so two mentions posted in
   * the same second are answered in the order they arrived —, leaving out `busy` (scopes whose turn
   * runs here or whose writes are still on their way). A scope `holder` already holds is
   * returned again while it has work.
   */
  claim(holder: string, limit: number, busy: readonly string[]): Promise<Claims>;
  /**
   * Announces the daemon to the others (doctor lists the fleet's daemons) and extends its
   * leases; returns those of `held` it still holds (a missing one was taken over).
   */
  renew(daemon: DaemonInfo, held: readonly string[]): Promise<string[]>;
  /** Gives a scope up, only if `holder` still holds it. */
  release(holder: string, key: string): Promise<void>;
  /** The daemon leaves: its leases end now. */
  leave(holder: string): Promise<void>;

  // A held scope's work.
  scopeWork(scope: string, batchSize: number): Promise<ScopeWork>;
  /** Creates a running turn over those of `eventIds` still waiting (another daemon may have ended some), atomically. */
  startTurn(scope: string, channel: string, eventIds: readonly string[]): Promise<number>;
  turn(id: number): Promise<TurnRecord | undefined>;
  eventsOfTurn(turnId: number): Promise<StoredEvent[]>;
  /**
   * Sets a turn's state while it is still in state `from` and `holder` holds its scope
   * (fenced); false otherwise. Final states carry over to the turn's events atomically.
   */
  updateTurn(from: TurnState, t: TurnUpdate, holder: string): Promise<boolean>;
  /**
   * Remembers an event published for a turn; idempotent. With `holder`, fenced: recorded
   * before the event is sent, and a LeaseLostError when `holder` no longer holds the scope
   * (the event must then not be sent).
   */
  recordReply(turnId: number, replyId: string, holder?: string): Promise<void>;
  /**
   * Mid-turn messages join a running turn (docs/architecture.md §3): those of `eventIds`
   * still waiting in the turn's scope become in_turn there and triggers of the turn, at once,
   * before the agent is given them; fenced. Returns the ids that joined.
   */
  joinTurn(turnId: number, eventIds: readonly string[], holder: string): Promise<string[]>;
  /** The reverse of joinTurn, for messages the turn could not take; fenced. */
  leaveTurn(turnId: number, eventIds: readonly string[], holder: string): Promise<void>;
  /** Of these turns, the ones no longer running (cancelled elsewhere, or ended). */
  notRunning(turnIds: readonly number[]): Promise<number[]>;
  /**
   * `!cancel`: the scopes' waiting events and open turns end as cancelled; `keys` undefined
   * means every scope of the channel. Returns the turns that were running and how many
   * turns and events ended.
   */
  cancelScopes(channel: string, keys: readonly string[] | undefined): Promise<{ running: number[]; ended: number }>;
  /** `!rotate`: bumps the scope's (or channel's) rotation count, so whoever runs it next starts a fresh session. */
  bumpRotation(key: string): Promise<void>;
  /** The scope's rotations plus its channel's. */
  rotationEpoch(scope: string, channel: string): Promise<number>;

  // Amendments.
  /**
   * An edit replaces an accepted event's text while no agent has been given it: it is
   * waiting, or in a turn queued for a retry. False otherwise (its turn runs, or ended).
   */
  replaceQueuedContent(eventId: string, content: string, editId: string): Promise<boolean>;
  /** Its author deleted a waiting event: deleted, if it is still waiting. */
  dropWaiting(eventId: string): Promise<boolean>;

  // Once-only claims, shared by every daemon of the queue.
  /** True the first time a control command's event id is claimed. */
  claimControl(eventId: string, createdAt: number): Promise<boolean>;
  /** True when `key` was not claimed within the last `windowMs` (then it is claimed now): 🔒 to a stranger. */
  claimOnce(key: string, windowMs: number): Promise<boolean>;
  /** Of `keys`, those never claimed before, claimed now: 👀 on a mention, once however often its turn starts. */
  claimFirst(keys: readonly string[]): Promise<string[]>;
  /** True for the first claim of `name` in the current period of `periodMs` (one heartbeat per period). */
  claimPeriod(name: string, periodMs: number): Promise<boolean>;

  /**
   * The conversations the agent is in (gate/participation.ts): `key` is `thread:<channel>/<root>` or
   * `channel:<id>`, `at` its last activity (unix ms); a later time replaces an earlier one,
   * never the reverse. Kept with the claims (`active:<key>`, pruned with them) so that a
   * restart, or another daemon of the fleet, starts with the set.
   */
  markActive(key: string, at: number): Promise<void>;
  /** The conversations active since `sinceMs` (unix ms). */
  activeSince(sinceMs: number): Promise<{ key: string; at: number }[]>;

  // Figures and retention.
  depth(): Promise<QueueDepth>;
  /** Deletes finished rows older than `olderThanMs`; open work is never pruned. */
  prune(olderThanMs: number, now?: number): Promise<void>;
  close(): Promise<void>;
}
