/**
 * The one scheduler (docs/architecture.md §3), the same for a single daemon and a fleet, over
 * the queue backend (backend.ts): one turn in flight per scope, arrivals meanwhile batched
 * into the next turn (≤ 50, by created_at) unless they join the running one (joinRunning: a
 * mid-turn steer), `agent.max_concurrent` turns at once, the scope with the oldest waiting
 * work first, caps per scope and in all whose refusals are announced, retries with backoff,
 * and a failure notice when a turn gives up. Every accepted event ends answered (complete),
 * failed with a notice (`failed`), cancelled by the owner (cancel), refused with a notice
 * (`refused`) or deleted by its author (dropWaiting) — never silently gone.
 *
 * The scheduler calls nothing above it: what it has to tell is emitted (SchedulerEvents) for
 * whoever built it to act on, and what a batch's turn must do first (end a rotated scope's
 * session) travels on the batch. The one question it asks, whether the relay stored a reply,
 * is a port (`confirmPublished`) answered by the relay.
 *
 * A loop of passes does the work: each claims scopes with work while slots are free (a
 * scope is run only while its lease is held; on SQLite every lease is always this daemon's),
 * prepares each claimed scope's next batch, and lets go of held scopes that got none;
 * `next()` hands the prepared batches out. A pass runs when something arrives through this
 * daemon (an accept, a turn's end, a retry coming due); on a shared backend also every
 * `pollMs` (other daemons' arrivals) with the leases renewed every third of a lease period.
 * A scope taken over from a daemon that stopped — or, on SQLite, a turn left running by this
 * daemon's previous process — resumes its unfinished turn as a recovered retry; the replies
 * recorded for it are first confirmed with the relay, so what was published is not published
 * again. A daemon that cannot renew its leases for most of a lease period stops its turns
 * (`lost`): by then another daemon may hold them.
 *
 * Only scope keys and turn ids are held in memory; event bodies stay in the backend and are
 * read when a batch is prepared, so a burst costs rows, not memory.
 */
import { EventEmitter } from "node:events";
import type { Event } from "nostr-tools";
import { Backoff } from "../base/backoff.js";
import { retry } from "../base/retry.js";
import { BoundedMap } from "../base/bounded-map.js";
import type { Logger } from "../base/log.js";
import { tagValue } from "../base/tags.js";
import { formatDuration } from "../config/duration.js";
import { KIND } from "../nostr/kinds.js";
import type { DaemonInfo, QueueBackend, QueueDepth, TurnRecord, TurnState, TurnUpdate } from "./backend.js";
import { STATE_RETENTION_MS } from "./backend.js";
import { DEFAULT_NOTICE_TIMING, RefusalCoalescer, type Refusal } from "./refusals.js";
import type { CoalesceOptions } from "../relay/coalesce.js";
import { parseScopeKey, scopeKey, scopeOf, type Scope, type SessionScope } from "./scope.js";

export interface SchedulerOptions {
  backend: QueueBackend;
  /** This daemon, as it holds leases (on SQLite only its id is used, in logs). */
  daemon: DaemonInfo;
  logger: Logger;
  sessionScope: SessionScope;
  /** Turns in flight across all scopes (`agent.max_concurrent`). */
  maxConcurrent: number;
  /** Events per turn; default 50 (the Rust bridge's batch size). */
  batchSize?: number;
  /** Waiting events per scope; above it the oldest are refused with a notice. Default 500. */
  scopeCap?: number;
  /** Waiting events in all; above it new events are refused. Default 10,000, so a burst of new threads stays bounded too. */
  totalCap?: number;
  /** Attempts per turn including the first; default 3. */
  maxAttempts?: number;
  /** The longest a turn is held for a provider's limit (`queue.hold_max`), its holds together; default 12 h. */
  holdMaxMs?: number;
  /** Retry delay after attempt n: min(maxMs, baseMs · factor^(n−1)); default 5 s then 5 min. */
  backoff?: TurnRetryPacing;
  /** How refusals are gathered into one `refused` per scope and reason; default: 100 ms of quiet, 1 s at most (refusals.ts). */
  refusalNotice?: CoalesceOptions;
  /** On a shared backend: look for work at least this often even without an arrival here. Default 1 s. */
  pollMs?: number;
  /**
   * Which of these event ids the relay has (the recorded replies of a turn about to run
   * again). A port, not an event: the scheduler needs the answer before it changes the turn
   * (a relay that cannot answer leaves the turn for the next pass), and the relay answers it.
   */
  confirmPublished(ids: string[]): Promise<string[]>;
}

/** What a Scheduler emits, checked by tsc on emit/on/once/off. The daemon's turn path acts on them. */
export interface SchedulerEvents {
  /** Batches are ready: call `next()`. */
  ready: [];
  /** A turn failed for good: post a failure notice that mentions the requesters. */
  failed: [failure: FinalFailure];
  /** Events refused by a cap (announced by the daemon that accepted the event that crossed it), coalesced per scope and reason. */
  refused: [refusal: Refusal];
  /** These running turns must stop: their scope is no longer ours, or the owner cancelled them elsewhere. */
  lost: [turnIds: number[]];
}

export interface Batch {
  turnId: number;
  scope: Scope;
  /** Oldest first; the last one is the reply anchor. */
  events: Event[];
  /** 1 for the first attempt. */
  attempt: number;
  /** The turn was left running by a daemon that stopped; this is its recovery. */
  recovered: boolean;
  /** Already published for this turn by an earlier attempt (as the relay confirms): do not publish the same reply again. */
  publishedReplyIds: string[];
  /**
   * With publishedReplyIds: the messages that joined the turn mid-way after its last reply
   * (a steer under way when the process stopped). They still need an answer; the rest of
   * the turn has one.
   */
  unansweredJoins: Event[];
  /**
   * The scope was rotated (`!rotate`, possibly through another daemon) since this daemon
   * last ran it: its agent session here ends before this turn opens one.
   */
  rotated: boolean;
}

export interface FinalFailure {
  turnId: number;
  scope: Scope;
  events: Event[];
  error: string;
  attempts: number;
  publishedReplyIds: string[];
}

/** How a failed turn's next attempt is paced. */
export interface TurnRetryPacing {
  baseMs: number;
  factor: number;
  maxMs: number;
}

/** 5 s, then 5 min: a blip is retried at once, a real outage is not hammered. */
export const DEFAULT_TURN_RETRY: TurnRetryPacing = { baseMs: 5_000, factor: 60, maxMs: 300_000 };

/** `queue.hold_max`'s default: a provider's daily limit resets within it. */
export const DEFAULT_HOLD_MAX_MS = 12 * 3_600_000;

/** The figures `depth()` reports; the backend is asked at most this often after a change. */
const FIGURES_EVERY_MS = 200;
/** Accepted events (without their text) this daemon keeps at hand for `storedEvent` (an edit's target). */
const EVENT_CACHE = 10_000;

interface Running {
  turnId: number;
  attempts: number;
  recovered: boolean;
  /** When a provider's limit first held the turn (Unix ms), if it ever did: `hold` counts hold_max from it. */
  heldSince?: number;
  /** Ended in the backend (`!cancel`, its message deleted): the slot is held until the agent side reports the end. */
  cancelled?: boolean;
  /** The scope's rotation count its batch was prepared under: seen by this daemon once the batch is handed out. */
  rotation: number;
}

interface Held {
  scope: Scope;
  running?: Running;
  /** A batch is being prepared, or the turn's last writes are on their way. */
  busy: boolean;
}

const NO_FIGURES: QueueDepth = { queued: 0, retrying: 0, running: 0, scopes: 0, byChannel: new Map() };

export class Scheduler extends EventEmitter<SchedulerEvents> {
  private readonly held = new Map<string, Held>();
  private readonly byTurn = new Map<number, Held>();
  private readonly ready: Batch[] = [];
  /** Writes for a turn (replies, its end), in order; the scope is looked at again after them. */
  private readonly writes = new Map<number, Promise<unknown>>();
  private readonly events = new BoundedMap<string, Event>(EVENT_CACHE);
  /** Scopes whose turn waits for a provider's limit to reset (`hold`), until when: for `/status`. */
  private readonly holds = new Map<string, { channel: string; until: number }>();
  /** Per scope this daemon has run (the most recent ones): the rotation count its session was made under. */
  private readonly rotationSeen = new BoundedMap<string, number>(EVENT_CACHE);
  private readonly refusals: RefusalCoalescer;
  private readonly retryDelay: Backoff;
  /**
   * This daemon's own cancel writes under way (`!cancel`, a deleted trigger): while one is,
   * a renewal cannot tell which running turns it ended, and takes none of them for ended by
   * another daemon (renew).
   */
  private cancelWrites = 0;
  /** Paces the next pass after a failed one (the backend away, a full disk). */
  private readonly passRetry = new Backoff({ baseMs: 500, capMs: 30_000, jitter: 0 });
  private readonly o: Required<SchedulerOptions>;
  private loop?: Promise<void>;
  private again = false;
  private started = false;
  private closed = false;
  /** Stopping: keep renewing what is held, claim and start nothing new. */
  private draining = false;
  private passTimer?: NodeJS.Timeout;
  private dueTimer?: { at: number; timer: NodeJS.Timeout };
  private figuresTimer?: NodeJS.Timeout;
  private figuresAt = 0;
  private lastRenewAt = 0;
  private lastRenewOk = Date.now();
  private figures: QueueDepth = NO_FIGURES;
  /** Events this daemon stored since `figures` was read. */
  private acceptedSince = 0;

  constructor(opts: SchedulerOptions) {
    super();
    this.o = {
      batchSize: 50,
      scopeCap: 500,
      totalCap: 10_000,
      maxAttempts: 3,
      holdMaxMs: DEFAULT_HOLD_MAX_MS,
      backoff: DEFAULT_TURN_RETRY,
      pollMs: 1_000,
      refusalNotice: DEFAULT_NOTICE_TIMING,
      ...opts,
    };
    this.refusals = new RefusalCoalescer(opts.logger, (r) => this.emit("refused", r), this.o.refusalNotice);
    // No jitter: a turn's retry time is shown in its log line.
    const b = this.o.backoff;
    this.retryDelay = new Backoff({ baseMs: b.baseMs, factor: b.factor, capMs: b.maxMs, jitter: 0 });
  }

  /** Other daemons share the queue (PostgreSQL): leases expire, and their arrivals are found by polling. */
  get shared(): boolean {
    return Number.isFinite(this.o.backend.leaseMs);
  }

  scopeOf(ev: Event, channel: string): Scope {
    return scopeOf(ev, channel, this.o.sessionScope);
  }

  /**
   * Starts the loop: reports the open work found (`queue.recovered`), runs the first pass,
   * which resumes what was left running, and prunes finished rows meanwhile. Once.
   */
  async start(): Promise<{ events: number; turns: number }> {
    if (this.started) return { events: 0, turns: 0 };
    this.started = true;
    const b = this.o.backend;
    void b.prune(STATE_RETENTION_MS).catch((err: unknown) => this.warnFailed("prune", err));
    await this.currentDepth();
    const open = { events: this.figures.queued, turns: this.figures.retrying + this.figures.running };
    if (open.events || open.turns) this.o.logger.info({ evt: "queue.recovered", ...open }, "open work found at start; it runs (again)");
    this.kick();
    return open;
  }

  /**
   * Durably accepts an event the gate let through, the caps applied. False for an id the
   * queue has already (a relay replay, or another daemon of the fleet was first): nothing
   * changes. `scope` overrides where it goes (an edit goes to the scope of the message it edits).
   */
  async accept(ev: Event, channel: string, scope: Scope = this.scopeOf(ev, channel)): Promise<boolean> {
    this.remember(ev);
    // The total is counted once the queue may be half full (by the last figures and what this
    // daemon accepted since; a fleet's other daemons add theirs at the next figures).
    const nearFull = this.figures.queued + this.acceptedSince >= this.o.totalCap / 2;
    const caps = { scope: this.o.scopeCap, total: nearFull ? this.o.totalCap : undefined };
    const r = await this.o.backend.accept(ev, channel, scope.key, caps);
    if (r.fresh) this.acceptedSince++;
    for (const x of r.refused) this.refusals.add(scope.key, scope.channel, x.reason, x);
    // Also for a duplicate: in a fleet the daemon holding the scope hears the event too and looks now.
    this.kick();
    return r.fresh;
  }

  /**
   * The next prepared batch, or null. One ended meanwhile (`!cancel`, its message deleted) is
   * dropped, its slot freed. The batch's rotation counts as seen once it is handed out: one
   * dropped before that carries its rotation to the scope's next batch here.
   */
  next(): Batch | null {
    for (let b = this.ready.shift(); b; b = this.ready.shift()) {
      const r = this.byTurn.get(b.turnId)?.running;
      if (r?.turnId === b.turnId && !r.cancelled) {
        this.rotationSeen.set(b.scope.key, r.rotation);
        return b;
      }
      if (r?.turnId === b.turnId) {
        this.finish(b.turnId);
        this.kick();
      }
    }
    return null;
  }

  /**
   * The accepted event with this id as the queue stored it (an edit's target, for its reply
   * anchor), without its content, which a reply's anchor does not need: from the events this
   * daemon accepted or ran; a batch's edit targets are loaded before the batch is handed out.
   */
  storedEvent(id: string): Event | undefined {
    return this.events.get(id);
  }

  /** Kept for storedEvent without its text, so a burst of long mentions costs no memory for it. */
  private remember(ev: Event): void {
    this.events.set(ev.id, ev.content ? { ...ev, content: "" } : ev);
  }

  /**
   * The turn running here in the scope (not one ended in the backend), if any. In a fleet
   * every daemon hears a mid-turn message; only the scope's holder finds its turn here.
   */
  runningTurn(scopeKey: string): number | undefined {
    const r = this.held.get(scopeKey)?.running;
    return r && !r.cancelled ? r.turnId : undefined;
  }

  /** Before publishing a reply: its id, recorded only while this daemon holds the scope (LeaseLostError otherwise). */
  recordBeforePublish(turnId: number, eventId: string): Promise<void> {
    return this.o.backend.recordReply(turnId, eventId, this.o.daemon.id);
  }

  /** Remembers a reply published for the turn (survives a crash; handed to a retry). */
  recordReply(turnId: number, eventId: string): void {
    this.chain(turnId, () => this.o.backend.recordReply(turnId, eventId));
  }

  /**
   * A waiting event of the turn's scope joins the running turn, durably and fenced by the
   * lease, then `deliver` hands it to the agent (so a restart replays the turn with it,
   * exactly once). The turn may end while the join is written (deliver says false): the
   * event waits again, written before the turn's end, which is queued behind this write and
   * would otherwise end the event with it. So `deliver` is a step of this one call, run
   * among the turn's writes, not an event: its answer decides the next write.
   */
  joinRunning(turnId: number, eventId: string, deliver: () => boolean): void {
    const r = this.byTurn.get(turnId)?.running;
    if (r?.turnId !== turnId || r.cancelled) return;
    let joined: string[] | undefined;
    let delivered: boolean | undefined;
    this.chain(turnId, async () => {
      // Written so that a retry after a lost connection repeats only what is missing.
      joined ??= await this.o.backend.joinTurn(turnId, [eventId], this.o.daemon.id);
      if (!joined.length) return;
      delivered ??= this.byTurn.get(turnId)?.running?.turnId === turnId && deliver();
      if (delivered) return;
      await this.o.backend.leaveTurn(turnId, joined, this.o.daemon.id);
      this.kick();
    });
  }

  /**
   * Events that joined the turn but could not be given to the agent (the turn ended first,
   * or had already answered) wait again, in created_at order, for the scope's next turn.
   */
  leaveRunning(turnId: number, eventIds: readonly string[]): void {
    if (!eventIds.length) return;
    this.chain(turnId, async () => {
      await this.o.backend.leaveTurn(turnId, eventIds, this.o.daemon.id);
      this.kick();
    });
  }

  /** Its author deleted a waiting event: it leaves the queue without a turn. False when it is not waiting. */
  async dropWaiting(eventId: string): Promise<boolean> {
    const dropped = await this.o.backend.dropWaiting(eventId);
    if (dropped) this.figuresChanged();
    return dropped;
  }

  /**
   * Ends one running turn as cancelled (its only trigger was deleted by its author), like
   * `!cancel` for that turn alone; the caller stops it at the agent. Its scope starts
   * nothing new until the agent side reports the end (complete or fail). False when it does
   * not run here, or ended.
   */
  async cancelRunning(turnId: number, reason: string): Promise<boolean> {
    const r = this.byTurn.get(turnId)?.running;
    if (r?.turnId !== turnId || r.cancelled) return false;
    const update = { id: turnId, state: "cancelled" as const, attempts: r.attempts, recovered: r.recovered, error: reason };
    return this.cancelWrite(
      () => this.o.backend.updateTurn("running", update, this.o.daemon.id),
      (ok) => {
        if (ok && this.byTurn.get(turnId)?.running === r) r.cancelled = true;
      },
    );
  }

  /**
   * One of this daemon's cancel writes, then `mark` (the turns it ended here flagged at
   * once, in the same step): counted in `cancelWrites` meanwhile, for renew.
   */
  private async cancelWrite<T>(write: () => Promise<T>, mark: (written: T) => void): Promise<T> {
    this.cancelWrites++;
    try {
      const written = await write();
      mark(written);
      return written;
    } finally {
      this.cancelWrites--;
    }
  }

  /** The turn ended normally. False when it was not running here (unknown, or ended already). */
  complete(turnId: number): boolean {
    const r = this.finish(turnId);
    if (!r) return false;
    if (r.cancelled) {
      // Its end is in the backend already; the scope may go on.
      this.kick();
      return true;
    }
    this.endTurn(r, { state: "done", error: null });
    return true;
  }

  /**
   * The turn failed. Retried after a backoff while attempts remain (`retry: false` for
   * failures a retry cannot fix, and never a recovered turn); otherwise final, reported
   * as `failed`.
   */
  fail(turnId: number, error: string, opts: { retry?: boolean } = {}): "retry" | "failed" | "ignored" {
    const r = this.finish(turnId);
    if (!r) return "ignored";
    if (r.cancelled) {
      this.kick();
      return "ignored";
    }
    if (opts.retry !== false && !r.recovered && r.attempts < this.o.maxAttempts) {
      const delay = this.retryDelay.delayFor(r.attempts - 1);
      this.o.logger.warn({ evt: "queue.turn_retry", turn: turnId, scope: r.scope.key, attempt: r.attempts, retry_in_ms: delay, error });
      this.endTurn(r, { state: "queued", error, retryInMs: delay, recovered: false });
      return "retry";
    }
    this.failFinally(r, error);
    return "failed";
  }

  /** Ends a turn as failed for good; the failure notice follows its last write. */
  private failFinally(r: Running & { scope: Scope; held: Held }, error: string): void {
    const turnId = r.turnId;
    this.o.logger.error({ evt: "queue.turn_failed", turn: turnId, scope: r.scope.key, attempts: r.attempts, error });
    this.endTurn(r, { state: "failed", error }, () =>
      this.notifyFailure(turnId, r.scope, error, r.attempts).catch((err: unknown) =>
        this.warnFailed(`failure notice of turn ${turnId}`, err),
      ),
    );
  }

  /**
   * The provider's limit stopped the turn until `until` (Unix ms): it runs again then, not
   * counted as an attempt. The turn stays queued in the backend like a retry (so `!cancel`
   * ends it, and a restart keeps it); new events of the scope wait behind it. Its holds
   * together last at most `holdMaxMs` from the first (a provider that names a fresh reset at
   * every try would otherwise hold it for ever): it runs again by then at the latest, and a
   * limit after that fails it for good, with the failure notice. Returns when it runs
   * again; undefined when it failed so, or was not running here.
   */
  hold(turnId: number, until: number, reason: string): number | undefined {
    const r = this.finish(turnId);
    if (!r) return undefined;
    if (r.cancelled) {
      this.kick();
      return undefined;
    }
    const now = Date.now();
    const since = r.heldSince ?? now;
    const end = since + this.o.holdMaxMs;
    if (now >= end) {
      const error = `the model provider's limit still held after queue.hold_max (${formatDuration(this.o.holdMaxMs)}) of waiting (${reason})`;
      this.holds.delete(r.scope.key);
      this.failFinally(r, error);
      return undefined;
    }
    const at = Math.min(Math.max(until, now), end);
    this.holds.set(r.scope.key, { channel: r.scope.channel, until: at });
    this.o.logger.warn({
      evt: "turn.held",
      turn: turnId,
      scope: r.scope.key,
      until: new Date(at).toISOString(),
      error: reason,
    });
    this.endTurn(r, { state: "queued", error: reason, retryInMs: at - now, recovered: false, attempts: r.attempts - 1, heldSince: since });
    return at;
  }

  /** Scopes held for a provider's limit, and until when (Unix ms). */
  heldScopes(): Array<{ scope: string; channel: string; until: number }> {
    const now = Date.now();
    return [...this.holds].filter(([, h]) => h.until > now).map(([scope, h]) => ({ scope, ...h }));
  }

  /**
   * `!cancel`: ends the target's waiting events, pending retries and running turns as
   * cancelled. A thread given in thread mode names one scope; no thread (a top-level
   * command) means every scope of the channel. Returns this daemon's running turns among
   * them (the caller cancels them at the agent; their slots free when it reports the end;
   * in a fleet another daemon's running turns stop there at its next renewal) and how
   * many turns and events were ended.
   */
  async cancel(target: { channel: string; thread?: string }): Promise<{ runningTurnIds: number[]; ended: number }> {
    const keys =
      this.o.sessionScope === "channel"
        ? [scopeKey(target.channel)]
        : target.thread
          ? [scopeKey(target.channel, target.thread)]
          : undefined;
    const mine: number[] = [];
    const { running, ended } = await this.cancelWrite(
      () => this.o.backend.cancelScopes(target.channel, keys),
      (written) => {
        for (const id of written.running) {
          const r = this.byTurn.get(id)?.running;
          if (r?.turnId !== id || r.cancelled) continue;
          r.cancelled = true;
          mine.push(id);
        }
      },
    );
    for (const [k, h] of this.holds) if (h.channel === target.channel && (!keys || keys.includes(k))) this.holds.delete(k);
    if (ended) this.o.logger.info({ evt: "queue.cancelled", channel: target.channel, thread: target.thread ?? null, ended, running });
    this.kick();
    return { runningTurnIds: mine, ended };
  }

  /** `!rotate`: whoever runs the scope (or the channel's scopes) next starts a fresh session. */
  rotate(key: string): Promise<void> {
    return this.o.backend.bumpRotation(key);
  }

  /**
   * Counts for metrics, `!status` and the heartbeat: in flight here, and the queue's waiting
   * events (those of pending retries included), scopes with work and retries, as the
   * backend last reported them (re-read after each change, at most every 200 ms).
   */
  depth(): { inFlight: number; queued: number; scopes: number; retrying: number } {
    const f = this.figures;
    return { inFlight: this.byTurn.size, queued: f.queued, scopes: f.scopes, retrying: f.retrying };
  }

  /** Accepted events waiting (queued or due for a retry) per channel, for the status page. */
  depthByChannel(): Map<string, number> {
    return new Map(this.figures.byChannel);
  }

  /** The figures as the backend has them now (tests, and whoever needs them exact). */
  async currentDepth(): Promise<QueueDepth> {
    const since = this.acceptedSince;
    this.figures = await this.o.backend.depth();
    this.figuresAt = Date.now();
    this.acceptedSince -= since;
    return this.figures;
  }

  /** On a shared backend: this daemon and the scopes it holds (for /status and /metrics). */
  fleetStatus(): { daemon: string; leases: number; scopes: string[]; queued: number } | undefined {
    if (!this.shared) return undefined;
    const scopes = [...this.held.keys()];
    return { daemon: this.o.daemon.id, leases: scopes.length, scopes, queued: this.figures.queued };
  }

  /**
   * Resolves once no pass runs or is about to, and no turn's write is on its way: what the
   * arrivals and turn ends so far lead to has happened (a pass that polls or waits for a
   * retry's due time is not waited for).
   */
  async idle(): Promise<void> {
    for (;;) {
      const pending = [...(this.loop ? [this.loop] : []), ...this.writes.values()];
      if (!pending.length && !this.again) return;
      await Promise.allSettled(pending);
      // The loop's own end (and the pass it starts when woken meanwhile) runs in a later tick.
      await new Promise((r) => setImmediate(r));
      if (!this.loop && !this.again && [...this.writes.values()].every((p) => pending.includes(p))) return;
    }
  }

  /** The daemon is stopping: nothing new is claimed or prepared; leases are still renewed while turns finish. */
  stopClaiming(): void {
    this.draining = true;
  }

  /**
   * Stops the loop, announces pending refusals, waits for pending writes and lets go of
   * the leases. Batches prepared but never started go back to the queue as they were, so
   * whoever runs them next does not spend their one recovery on them.
   */
  async close(): Promise<void> {
    this.refusals.flush();
    this.draining = true;
    this.closed = true;
    for (const t of [this.passTimer, this.dueTimer?.timer, this.figuresTimer]) if (t) clearTimeout(t);
    await this.loop?.catch(() => undefined);
    for (const b of this.ready.splice(0)) {
      const r = this.finish(b.turnId);
      if (!r) continue;
      const back = { id: b.turnId, state: "queued" as const, attempts: b.attempt - 1, recovered: b.recovered, error: null };
      await this.o.backend.updateTurn("running", back, this.o.daemon.id).catch((err: unknown) => this.warnFailed(`turn ${b.turnId}`, err));
    }
    await Promise.allSettled([...this.writes.values()]);
    await this.o.backend
      .leave(this.o.daemon.id)
      .catch((err: unknown) => this.o.logger.warn({ evt: "queue.fleet_leave_failed", err: errText(err) }));
  }

  private finish(turnId: number): (Running & { scope: Scope; held: Held }) | undefined {
    const h = this.byTurn.get(turnId);
    if (!h?.running || h.running.turnId !== turnId) return undefined;
    const r = { ...h.running, scope: h.scope, held: h };
    this.byTurn.delete(turnId);
    h.running = undefined;
    return r;
  }

  /** The turn's end, written after its other writes; then `after`, and the scope is looked at again. */
  private endTurn(
    r: Running & { held: Held },
    end: { state: TurnState; error: string | null; retryInMs?: number; recovered?: boolean; attempts?: number; heldSince?: number },
    after?: () => Promise<void>,
  ): void {
    const update: TurnUpdate = { id: r.turnId, attempts: r.attempts, recovered: end.recovered ?? r.recovered, ...end };
    let ended = false;
    this.chain(r.turnId, async () => {
      ended ||= await this.o.backend.updateTurn("running", update, this.o.daemon.id);
    });
    // A separate write, so a retry after a lost connection cannot skip the notice.
    this.chain(r.turnId, async () => void (ended && (await after?.())), r.held);
  }

  private async notifyFailure(turnId: number, scope: Scope, error: string, attempts: number): Promise<void> {
    const events = (await this.o.backend.eventsOfTurn(turnId)).map((e) => e.event);
    const publishedReplyIds = (await this.o.backend.turn(turnId))?.reply_ids ?? [];
    this.emit("failed", { turnId, scope, events, error, attempts, publishedReplyIds });
  }

  /**
   * Runs `write` after the turn's earlier writes. `end`: the turn's last write; its scope
   * is not looked at again until the write is done (else a pass would find the turn still
   * "running" and resume it), then a pass looks for the scope's next work.
   */
  private chain(turnId: number, write: () => Promise<unknown>, end?: Held): void {
    if (end) end.busy = true;
    const before = this.writes.get(turnId) ?? Promise.resolve();
    const p = before
      .then(() => this.persist(turnId, write))
      .catch((err: unknown) => this.o.logger.error({ evt: "queue.store_write_failed", turn: turnId, err: errText(err) }));
    this.writes.set(turnId, p);
    if (end)
      void p.then(() => {
        if (this.writes.get(turnId) === p) this.writes.delete(turnId);
        end.busy = false;
        this.figuresChanged();
        this.kick();
      });
  }

  /**
   * A turn's write, retried while the backend is away (a database outage, a full disk): on
   * a shared backend for up to a lease period, past which the scope may be another daemon's,
   * which resumes the turn from what was stored; on SQLite until it succeeds.
   */
  private async persist(turnId: number, write: () => Promise<unknown>): Promise<void> {
    await retry(write, {
      backoff: { baseMs: 100, capMs: this.shared ? 2_000 : 30_000, jitter: 0 },
      deadline: Date.now() + this.o.backend.leaseMs,
      retryable: () => !this.closed,
      onRetry: (_attempt, err, delay) =>
        this.o.logger.warn({ evt: "queue.store_write_retry", turn: turnId, err: errText(err), retry_ms: delay }),
    });
  }

  /** Wakes the loop now (coalesced: one pass at a time, one more if woken during it). */
  private kick(): void {
    if (this.closed || !this.started) return;
    if (this.loop) {
      this.again = true;
      return;
    }
    if (this.passTimer) clearTimeout(this.passTimer);
    this.passTimer = undefined;
    let failed = false;
    this.loop = this.pass()
      .then(() => this.passRetry.reset())
      .catch((err: unknown) => {
        failed = true;
        this.o.logger.warn({ evt: "queue.fleet_pass_failed", err: errText(err) });
      })
      .finally(() => {
        this.loop = undefined;
        if (this.closed) return;
        if (this.again) {
          this.again = false;
          this.kick();
        } else if (failed || this.shared) {
          this.passTimer = setTimeout(() => this.kick(), failed ? this.passRetry.next() : this.o.pollMs);
          this.passTimer.unref();
        }
      });
  }

  private async pass(): Promise<void> {
    const { backend, daemon } = this.o;
    const now = Date.now();
    // A pass runs pollMs after the last one ended: renewing a poll early keeps the gap within
    // leaseMs / 3, the 10 s in which a turn cancelled by another daemon stops here (docs/fleet.md).
    if (this.shared && now - this.lastRenewAt >= backend.leaseMs / 3 - this.o.pollMs) await this.renew(now);
    if (this.draining) return;
    // byTurn holds the prepared batches too: each counts against max_concurrent from the start.
    const free = this.o.maxConcurrent - this.byTurn.size;
    if (free > 0) {
      const busy = [...this.held.values()].filter((h) => h.running || h.busy).map((h) => h.scope.key);
      const claims = await backend.claim(daemon.id, free, busy);
      this.armDue(claims.nextDueInMs);
      for (const c of claims.scopes) {
        let h = this.held.get(c.key);
        if (h?.running || h?.busy) continue;
        if (!h) this.held.set(c.key, (h = { scope: parseScopeKey(c.key), busy: false }));
        if (c.from)
          this.o.logger.info({ evt: "queue.scope_taken_over", scope: c.key, from: c.from }, "took over a scope whose lease expired");
        await this.prepare(h, c.from);
      }
    }
    // Held scopes that got no batch now let go: another daemon, or a later pass, takes them when they have work.
    for (const h of [...this.held.values()]) {
      if (h.running || h.busy) continue;
      this.held.delete(h.scope.key);
      await backend.release(daemon.id, h.scope.key);
    }
    this.figuresChanged();
    if (this.ready.length) this.emit("ready");
  }

  private async renew(now: number): Promise<void> {
    const { backend, daemon } = this.o;
    this.lastRenewAt = now;
    try {
      const kept = new Set(await backend.renew(daemon, [...this.held.keys()]));
      this.lastRenewOk = now;
      const lost = [...this.held.keys()].filter((k) => !kept.has(k));
      // Turns cancelled here already wait for the agent side's end, not for this: also those
      // cancelled here while the question was out, and, while a cancel of ours is being
      // written, any (the next renewal, a third of a lease later, asks again).
      const mine = (id: number) => this.byTurn.get(id)?.running?.cancelled === true;
      const ended = await backend.notRunning([...this.byTurn.keys()].filter((id) => !mine(id)));
      const cancelledElsewhere = this.cancelWrites > 0 ? [] : ended.filter((id) => !mine(id));
      this.drop(lost, cancelledElsewhere, "taken over by another daemon");
      await this.currentDepth();
    } catch (err) {
      this.o.logger.warn({ evt: "queue.lease_renew_failed", err: errText(err) }, "could not renew scope leases");
      // Past the lease period another daemon may hold our scopes: stop acting on them.
      if (now - this.lastRenewOk > backend.leaseMs * 0.8) this.drop([...this.held.keys()], [], "leases could not be renewed in time");
    }
  }

  /** Forgets scopes no longer held and stops their running turns (and turns cancelled elsewhere). */
  private drop(keys: string[], cancelledTurns: number[], why: string): void {
    const stop: number[] = cancelledTurns.filter((id) => this.byTurn.has(id));
    for (const id of stop) this.finish(id);
    for (const k of keys) {
      const h = this.held.get(k);
      if (!h) continue;
      this.held.delete(k);
      if (h.running) {
        stop.push(h.running.turnId);
        this.finish(h.running.turnId);
      }
      for (let i = this.ready.length - 1; i >= 0; i--) if (this.ready[i]!.scope.key === k) this.ready.splice(i, 1);
      this.o.logger.warn({ evt: "queue.scope_lost", scope: k, why });
    }
    if (stop.length) this.emit("lost", stop);
  }

  /** Prepares a claimed scope's next batch: its open turn (a due retry, or one left running), else its waiting events. */
  private async prepare(h: Held, from: string | null): Promise<void> {
    const { backend, daemon } = this.o;
    h.busy = true;
    try {
      const work = await backend.scopeWork(h.scope.key, this.o.batchSize);
      let batch: Batch | undefined;
      if (work.turn) {
        // A retry not yet due waits (claims leave such a scope out; this is a race with its write).
        if (work.turn.state === "running" || work.due) batch = await this.resume(h, work.turn, from);
      } else if (work.waiting.length) {
        const turnId = await backend.startTurn(h.scope.key, h.scope.channel, work.waiting);
        batch = await this.assemble(h, turnId, 1, false, []);
        if (!batch.events.length) {
          // Another daemon ended them since they were read (deleted by their author, `!cancel`).
          const update = {
            id: turnId,
            state: "cancelled" as const,
            attempts: 1,
            recovered: false,
            error: "its events ended before it started",
          };
          await backend.updateTurn("running", update, daemon.id);
          batch = undefined;
        }
      }
      if (!batch) return;
      const rotation = await this.o.backend.rotationEpoch(h.scope.key, h.scope.channel);
      const seen = this.rotationSeen.get(h.scope.key);
      // Never run here before: there is no session of it to end.
      batch.rotated = seen !== undefined && seen !== rotation;
      h.running = {
        turnId: batch.turnId,
        attempts: batch.attempt,
        recovered: batch.recovered,
        heldSince: work.turn?.held_since ?? undefined,
        rotation,
      };
      this.holds.delete(h.scope.key);
      this.byTurn.set(batch.turnId, h);
      this.ready.push(batch);
    } finally {
      h.busy = false;
    }
  }

  /**
   * An open turn of a scope now held: a due retry, or a turn left running by a daemon that
   * stopped (another one, or this daemon's previous process). A turn left running is resumed
   * as a recovered attempt while attempts remain; past that it gives up with a notice.
   */
  private async resume(h: Held, t: TurnRecord, from: string | null): Promise<Batch | undefined> {
    const { backend, daemon } = this.o;
    const leftRunning = t.state === "running";
    if (leftRunning && t.attempts >= this.o.maxAttempts) {
      const error = `the daemon running this turn stopped${from ? ` (${from})` : ""} and its attempts were spent`;
      const update = { id: t.id, state: "failed" as const, attempts: t.attempts, recovered: true, error };
      if (await backend.updateTurn("running", update, daemon.id)) {
        this.o.logger.error({ evt: "queue.turn_failed", turn: t.id, scope: h.scope.key, attempts: t.attempts, error });
        await this.notifyFailure(t.id, h.scope, error, t.attempts);
      }
      return undefined;
    }
    // Ids recorded before publishing: only those the relay has were really published. Asked
    // before the turn changes, so a relay that cannot answer leaves it for the next pass.
    const published = t.reply_ids.length ? await this.o.confirmPublished(t.reply_ids) : [];
    const recovered = leftRunning || t.recovered;
    const attempts = t.attempts + 1;
    const update = { id: t.id, state: "running" as const, attempts, recovered, error: t.error };
    if (!(await backend.updateTurn(t.state, update, daemon.id))) return undefined;
    if (leftRunning)
      this.o.logger.info({
        evt: "queue.turn_resumed",
        turn: t.id,
        scope: h.scope.key,
        from,
        recorded: t.reply_ids.length,
        published: published.length,
      });
    return this.assemble(h, t.id, attempts, recovered, published);
  }

  private async assemble(h: Held, turnId: number, attempt: number, recovered: boolean, publishedReplyIds: string[]): Promise<Batch> {
    const stored = await this.o.backend.eventsOfTurn(turnId);
    const events = stored.map((e) => e.event);
    for (const e of events) this.remember(e);
    // An edit is answered under the message it edits: that message is at hand too.
    for (const e of events) {
      const target = e.kind === KIND.edit ? tagValue(e, "e") : undefined;
      if (!target || this.events.has(target)) continue;
      const t = await this.o.backend.event(target);
      if (t) this.remember(t.event);
    }
    // Messages steered in after the last reply the relay has: they still need an answer.
    const unansweredJoins = stored.filter((e) => e.joined_after !== null && e.joined_after >= publishedReplyIds.length).map((e) => e.event);
    return { turnId, scope: h.scope, events, attempt, recovered, publishedReplyIds, unansweredJoins, rotated: false };
  }

  /** A retry comes due later: a pass then (the soonest one wins). */
  private armDue(inMs: number | undefined): void {
    if (inMs === undefined) return;
    const at = Date.now() + Math.max(0, inMs);
    if (this.dueTimer && this.dueTimer.at <= at) return;
    if (this.dueTimer) clearTimeout(this.dueTimer.timer);
    const timer = setTimeout(() => {
      this.dueTimer = undefined;
      this.kick();
    }, at - Date.now());
    timer.unref();
    this.dueTimer = { at, timer };
  }

  /** The figures are re-read soon after a change (at most every FIGURES_EVERY_MS; no timer while nothing changes). */
  private figuresChanged(): void {
    if (this.figuresTimer || this.closed) return;
    const wait = Math.max(0, this.figuresAt + FIGURES_EVERY_MS - Date.now());
    this.figuresTimer = setTimeout(() => {
      this.figuresTimer = undefined;
      this.currentDepth().catch((err: unknown) => this.warnFailed("queue depth", err));
    }, wait);
    this.figuresTimer.unref();
  }

  private warnFailed(what: string, err: unknown): void {
    this.o.logger.warn({ evt: "queue.store_write_failed", what, err: errText(err) });
  }
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
