/**
 * Per-scope queues over the durable store (docs/architecture.md §3): one turn in flight
 * per scope, arrivals meanwhile batched into the next turn (≤ 50, by created_at) unless
 * they join the running one (joinRunning: a mid-turn steer), a global concurrency limit,
 * oldest-waiting-scope-first fairness, a per-scope cap whose refusals are announced,
 * retries with backoff, and restart recovery. Every accepted event ends answered
 * (complete), failed with a notice (onFinalFailure), cancelled by the owner (cancel),
 * refused with a notice (onRefused) or deleted by its author (dropWaiting, logged) —
 * never silently gone.
 *
 * Only ids and timestamps are held in memory; event bodies are read back from SQLite
 * when a batch starts, so a burst costs memory per event id, not per event body.
 */
import type { Event } from "nostr-tools";
import type { Logger } from "../base/log.js";
import type { QueueStore, StoredEvent } from "./store.js";
import { RefusalCoalescer, type Refusal, type RefusedEvent } from "./refusals.js";
import { parseScopeKey, scopeKey, scopeOf, type Scope, type SessionScope } from "./scope.js";
import { STATE_RETENTION_MS } from "./state-store.js";
import { Backoff } from "../base/backoff.js";

export interface SchedulerOptions {
  store: QueueStore;
  logger: Logger;
  sessionScope: SessionScope;
  /** Turns in flight across all scopes (`agent.max_concurrent`). */
  maxConcurrent: number;
  /** Events per turn; default 50 (the Rust bridge's batch size). */
  batchSize?: number;
  /** Waiting events per scope; above it the oldest are refused with a notice. Default 500. */
  scopeCap?: number;
  /** Waiting events across all scopes; above it new events are refused. Default 10,000, so a burst of new threads stays bounded too. */
  totalCap?: number;
  /** Attempts per turn including the first; default 3. */
  maxAttempts?: number;
  /** Retry delay after attempt n: min(maxMs, baseMs · factor^(n−1)); default 5 s then 5 min. */
  backoff?: TurnRetryPacing;
  now?: () => number;
  onRefused?(r: Refusal): void;
  /** A turn failed for good: post a failure notice that mentions the requesters. */
  onFinalFailure?(f: FinalFailure): void;
  /** Something may be ready: call `next()` (after accept/complete/fail/cancel, and when a retry comes due). */
  onWake?(): void;
}

export interface Batch {
  turnId: number;
  scope: Scope;
  /** Oldest first; the last one is the reply anchor. */
  events: Event[];
  /** 1 for the first attempt. */
  attempt: number;
  /** The turn was running when the process stopped; this is its one retry. */
  recovered: boolean;
  /** Already published for this turn by an earlier attempt: do not publish the same reply again. */
  publishedReplyIds: string[];
  /**
   * With publishedReplyIds: the messages that joined the turn mid-way after its last reply
   * (a steer under way when the process stopped). They still need an answer; the rest of
   * the turn has one.
   */
  unansweredJoins: Event[];
}

export interface FinalFailure {
  turnId: number;
  scope: Scope;
  events: Event[];
  error: string;
  attempts: number;
  publishedReplyIds: string[];
}

interface Waiting extends RefusedEvent {}

interface ScopeState {
  scope: Scope;
  waiting: Waiting[];
  /** Turn in flight (also a cancelled one until the agent side reports it ended). */
  running?: { turnId: number; attempts: number; recovered: boolean; cancelled: boolean };
  retry?: { turnId: number; attempts: number; recovered: boolean; dueAt: number; oldest: number; size: number };
}

/** How a failed turn's next attempt is paced, in both schedulers. */
export interface TurnRetryPacing {
  baseMs: number;
  factor: number;
  maxMs: number;
}

/** 5 s, then 5 min: a blip is retried at once, a real outage is not hammered. */
export const DEFAULT_TURN_RETRY: TurnRetryPacing = { baseMs: 5_000, factor: 60, maxMs: 300_000 };

/** The delays of `pacing`, through the one Backoff (no jitter: a turn's retry time is shown in logs). */
export function turnRetryBackoff(pacing: TurnRetryPacing): Backoff {
  return new Backoff({ baseMs: pacing.baseMs, factor: pacing.factor, capMs: pacing.maxMs, jitter: 0 });
}
/** Finished events and turns are deleted after STATE_RETENTION_MS, checked every 1,000 ended turns and at recovery. */
const PRUNE_EVERY = 1_000;

export class Scheduler {
  private readonly scopes = new Map<string, ScopeState>();
  private readonly byTurn = new Map<number, ScopeState>();
  private readonly refusals: RefusalCoalescer;
  private totalWaiting = 0;
  private inFlight = 0;
  private wakeTimer: NodeJS.Timeout | undefined;
  private wakePending = false;
  private recovered = false;
  private settled = 0;
  private readonly o: Required<Omit<SchedulerOptions, "onRefused" | "onFinalFailure" | "onWake">> & SchedulerOptions;
  /** A failed turn's retry delay; no jitter, the due time is stored and shown in the log line. */
  private readonly retryDelay: Backoff;

  constructor(opts: SchedulerOptions) {
    this.o = { batchSize: 50, scopeCap: 500, totalCap: 10_000, maxAttempts: 3, backoff: DEFAULT_TURN_RETRY, now: Date.now, ...opts };
    this.refusals = new RefusalCoalescer(opts.logger, opts.onRefused);
    this.retryDelay = turnRetryBackoff(this.o.backoff);
  }

  scopeOf(ev: Event, channel: string): Scope {
    return scopeOf(ev, channel, this.o.sessionScope);
  }

  /**
   * Durably accepts an event the gate let through. False for a duplicate id (a relay
   * replay): nothing changes. The store write happens before anything else. `scope`
   * overrides where it goes (an edit goes to the scope of the message it edits).
   */
  accept(ev: Event, channel: string, scope: Scope = this.scopeOf(ev, channel)): boolean {
    if (!this.o.store.accept(ev, channel, scope.key)) return false;
    this.enqueue(scope, { id: ev.id, author: ev.pubkey, created_at: ev.created_at });
    this.wake();
    return true;
  }

  private state(scope: Scope): ScopeState {
    let s = this.scopes.get(scope.key);
    if (!s) this.scopes.set(scope.key, (s = { scope, waiting: [] }));
    return s;
  }

  private enqueue(scope: Scope, w: Waiting): void {
    if (this.totalWaiting >= this.o.totalCap) {
      this.o.store.setEventStates([w.id], "refused");
      this.refusals.add(scope.key, scope.channel, "queue-full", w);
      return;
    }
    const s = this.state(scope);
    // Relays replay newest-first; keep the list ordered by created_at (ties by arrival).
    let i = s.waiting.length;
    while (i > 0 && s.waiting[i - 1]!.created_at > w.created_at) i--;
    s.waiting.splice(i, 0, w);
    this.totalWaiting++;
    if (s.waiting.length > this.o.scopeCap) {
      const oldest = s.waiting.shift()!;
      this.totalWaiting--;
      this.o.store.setEventStates([oldest.id], "refused");
      this.refusals.add(scope.key, scope.channel, "scope-cap", oldest);
    }
  }

  /** The next batch to run, or null when nothing may start now (idle, all busy, or at max_concurrent). */
  next(): Batch | null {
    if (this.inFlight >= this.o.maxConcurrent) return null;
    const now = this.o.now();
    let best: ScopeState | undefined;
    let bestAge = Infinity;
    for (const s of this.scopes.values()) {
      if (s.running) continue;
      const age = s.retry ? (s.retry.dueAt <= now ? s.retry.oldest : Infinity) : (s.waiting[0]?.created_at ?? Infinity);
      if (age < bestAge) [best, bestAge] = [s, age];
    }
    if (!best) return null;
    return best.retry ? this.startRetry(best) : this.startNew(best);
  }

  private startNew(s: ScopeState): Batch {
    const take = s.waiting.splice(0, this.o.batchSize);
    this.totalWaiting -= take.length;
    const turnId = this.o.store.startTurn(
      s.scope.key,
      s.scope.channel,
      take.map((w) => w.id),
    );
    return this.begin(s, turnId, 1, false);
  }

  private startRetry(s: ScopeState): Batch {
    const r = s.retry!;
    s.retry = undefined;
    const attempts = r.attempts + 1;
    this.o.store.updateTurn({ id: r.turnId, state: "running", attempts, next_attempt_at: 0, recovered: r.recovered ? 1 : 0, error: null });
    return this.begin(s, r.turnId, attempts, r.recovered);
  }

  private begin(s: ScopeState, turnId: number, attempts: number, recovered: boolean): Batch {
    s.running = { turnId, attempts, recovered, cancelled: false };
    this.byTurn.set(turnId, s);
    this.inFlight++;
    const stored = this.o.store.eventsOfTurn(turnId);
    const publishedReplyIds = this.o.store.turn(turnId)?.reply_ids ?? [];
    const unansweredJoins = stored.filter((e) => e.joined_after !== null && e.joined_after >= publishedReplyIds.length).map((e) => e.event);
    return { turnId, scope: s.scope, events: stored.map((e) => e.event), attempt: attempts, recovered, publishedReplyIds, unansweredJoins };
  }

  /** An accepted event as stored (an edit's target, for its reply anchor). */
  storedEvent(id: string): Event | undefined {
    return this.o.store.event(id)?.event;
  }

  /** The turn running in the scope now (not one the owner cancelled), if any. */
  runningTurn(scopeKey: string): number | undefined {
    const r = this.scopes.get(scopeKey)?.running;
    return r && !r.cancelled ? r.turnId : undefined;
  }

  /**
   * A waiting event of the turn's scope joins the running turn (a mid-turn message being
   * steered into it): durably first, so a restart replays the turn with it, exactly once.
   * False when the turn is not running here or the event is not waiting in its scope.
   */
  joinRunning(turnId: number, eventId: string): boolean {
    const s = this.byTurn.get(turnId);
    if (!s?.running || s.running.turnId !== turnId || s.running.cancelled) return false;
    const i = s.waiting.findIndex((w) => w.id === eventId);
    if (i < 0) return false;
    s.waiting.splice(i, 1);
    this.totalWaiting--;
    this.o.store.joinTurn(turnId, [eventId]);
    return true;
  }

  /**
   * Events that joined the turn but could not be given to the agent (the turn ended first,
   * or had already answered) wait again, in created_at order, for the scope's next turn.
   */
  leaveRunning(turnId: number, eventIds: readonly string[]): void {
    const s = this.byTurn.get(turnId);
    if (!s || !eventIds.length) return;
    this.o.store.leaveTurn(turnId, eventIds);
    for (const id of eventIds) {
      const e = this.o.store.event(id);
      if (e) this.enqueue(s.scope, { id, author: e.event.pubkey, created_at: e.created_at });
    }
    this.wake();
  }

  /**
   * Its author deleted a waiting event: it leaves the queue without a turn. False when it
   * is not waiting (unknown, already in a turn, or finished).
   */
  dropWaiting(scopeKey: string, eventId: string): boolean {
    const s = this.scopes.get(scopeKey);
    const i = s?.waiting.findIndex((w) => w.id === eventId) ?? -1;
    if (!s || i < 0) return false;
    s.waiting.splice(i, 1);
    this.totalWaiting--;
    this.o.store.setEventStates([eventId], "deleted");
    this.forgetIfIdle(s);
    return true;
  }

  /**
   * Ends one running turn as cancelled (its only trigger was deleted by its author), like
   * `!cancel` for that turn alone: the scope's other waiting events stay. Returns whether
   * it was running; the caller stops it at the agent.
   */
  cancelRunning(turnId: number, reason: string): boolean {
    const s = this.byTurn.get(turnId);
    const r = s?.running;
    if (!s || !r || r.turnId !== turnId || r.cancelled) return false;
    this.o.store.updateTurn({
      id: turnId,
      state: "cancelled",
      attempts: r.attempts,
      next_attempt_at: 0,
      recovered: r.recovered ? 1 : 0,
      error: reason,
    });
    r.cancelled = true;
    return true;
  }

  /** Remembers a reply published for the turn (survives a crash; handed to a retry). */
  recordReply(turnId: number, eventId: string): void {
    this.o.store.recordReply(turnId, eventId);
  }

  /** The turn ended normally. False when it was not running here (unknown, or ended already). */
  complete(turnId: number): boolean {
    const state = this.byTurn.get(turnId);
    const s = this.finish(turnId);
    if (!s) return false;
    if (!s.cancelled)
      this.o.store.updateTurn({
        id: turnId,
        state: "done",
        attempts: s.attempts,
        next_attempt_at: 0,
        recovered: s.recovered ? 1 : 0,
        error: null,
      });
    this.settle(state);
    return true;
  }

  /**
   * The turn failed. Retried after a backoff while attempts remain (`retry: false` for
   * failures a retry cannot fix); otherwise final, reported through onFinalFailure.
   */
  fail(turnId: number, error: string, opts: { retry?: boolean } = {}): "retry" | "failed" | "ignored" {
    const state = this.byTurn.get(turnId);
    const s = this.finish(turnId);
    if (!s || !state) return "ignored";
    if (s.cancelled) {
      this.settle(state);
      return "ignored";
    }
    const canRetry = opts.retry !== false && !s.recovered && s.attempts < this.o.maxAttempts;
    if (canRetry) {
      const dueAt = this.o.now() + this.retryDelay.delayFor(s.attempts - 1);
      this.o.store.updateTurn({ id: turnId, state: "queued", attempts: s.attempts, next_attempt_at: dueAt, recovered: 0, error });
      const events = this.o.store.eventsOfTurn(turnId);
      state.retry = { turnId, attempts: s.attempts, recovered: false, dueAt, oldest: events[0]?.created_at ?? 0, size: events.length };
      this.o.logger.warn({
        evt: "queue.turn_retry",
        turn: turnId,
        scope: state.scope.key,
        attempt: s.attempts,
        retry_in_ms: dueAt - this.o.now(),
        error,
      });
      this.armTimer();
      this.settle(state);
      return "retry";
    }
    this.o.store.updateTurn({
      id: turnId,
      state: "failed",
      attempts: s.attempts,
      next_attempt_at: 0,
      recovered: s.recovered ? 1 : 0,
      error,
    });
    this.o.logger.error({ evt: "queue.turn_failed", turn: turnId, scope: state.scope.key, attempts: s.attempts, error });
    const events = this.o.store.eventsOfTurn(turnId).map((e) => e.event);
    const publishedReplyIds = this.o.store.turn(turnId)?.reply_ids ?? [];
    this.settle(state);
    this.o.onFinalFailure?.({ turnId, scope: state.scope, events, error, attempts: s.attempts, publishedReplyIds });
    return "failed";
  }

  private finish(turnId: number): ScopeState["running"] | undefined {
    const state = this.byTurn.get(turnId);
    const r = state?.running;
    if (!state || !r || r.turnId !== turnId) return undefined;
    this.byTurn.delete(turnId);
    state.running = undefined;
    this.inFlight--;
    return r;
  }

  /** After a turn ended: drop an idle scope's state and let the owner look for more work. */
  private settle(s: ScopeState | undefined): void {
    if (s) this.forgetIfIdle(s);
    // Finished rows are kept a while for inspection, then pruned so the file stays small.
    if (++this.settled % PRUNE_EVERY === 0) this.o.store.prune(STATE_RETENTION_MS, this.o.now());
    this.wake();
  }

  private forgetIfIdle(s: ScopeState): void {
    if (!s.running && !s.retry && s.waiting.length === 0) this.scopes.delete(s.scope.key);
  }

  /**
   * `!cancel`: ends the matching scopes' waiting events, pending retries and running turns
   * as cancelled. A thread given in thread mode names one scope; no thread (a top-level
   * command) means every scope of the channel. Returns the running turn ids (the caller
   * cancels them at the agent; their slot frees when it reports complete/fail) and how
   * many turns and events were ended.
   */
  cancel(target: { channel: string; thread?: string }): { runningTurnIds: number[]; ended: number } {
    const keys =
      this.o.sessionScope === "channel"
        ? [scopeKey(target.channel)]
        : target.thread
          ? [scopeKey(target.channel, target.thread)]
          : [...this.scopes.values()].filter((s) => s.scope.channel === target.channel).map((s) => s.scope.key);
    const runningTurnIds: number[] = [];
    let ended = 0;
    this.o.store.transaction(() => {
      for (const key of keys) {
        const s = this.scopes.get(key);
        if (!s) continue;
        if (s.waiting.length) {
          this.o.store.setEventStates(
            s.waiting.map((w) => w.id),
            "cancelled",
          );
          ended += s.waiting.length;
          this.totalWaiting -= s.waiting.length;
          s.waiting = [];
        }
        for (const t of [s.retry, s.running && !s.running.cancelled ? s.running : undefined]) {
          if (!t) continue;
          this.o.store.updateTurn({
            id: t.turnId,
            state: "cancelled",
            attempts: t.attempts,
            next_attempt_at: 0,
            recovered: t.recovered ? 1 : 0,
            error: "cancelled by owner",
          });
          ended++;
        }
        s.retry = undefined;
        if (s.running && !s.running.cancelled) {
          s.running.cancelled = true;
          runningTurnIds.push(s.running.turnId);
        }
        this.forgetIfIdle(s);
      }
    });
    if (ended)
      this.o.logger.info({
        evt: "queue.cancelled",
        channel: target.channel,
        thread: target.thread ?? null,
        ended,
        running: runningTurnIds,
      });
    this.wake();
    return { runningTurnIds, ended };
  }

  /**
   * After a restart: waiting events are queued again; a turn that was running gets one
   * more attempt (its published reply ids come with the batch); retries keep their time.
   */
  recover(): { events: number; turns: number } {
    // Once per process: a second pass would queue the same events twice.
    if (this.recovered) return { events: 0, turns: 0 };
    this.recovered = true;
    const now = this.o.now();
    this.o.store.prune(STATE_RETENTION_MS, now);
    const turns = this.o.store.openTurns();
    for (const t of turns) {
      const recovered = t.state === "running" || t.recovered === 1;
      const dueAt = t.state === "running" ? now : t.next_attempt_at;
      if (t.state === "running")
        this.o.store.updateTurn({ id: t.id, state: "queued", attempts: t.attempts, next_attempt_at: dueAt, recovered: 1, error: t.error });
      const events = this.o.store.eventsOfTurn(t.id);
      const scope = this.state(parseScopeKey(t.scope));
      scope.retry = { turnId: t.id, attempts: t.attempts, recovered, dueAt, oldest: events[0]?.created_at ?? 0, size: events.length };
    }
    const waiting: StoredEvent[] = this.o.store.waitingEvents();
    for (const e of waiting) this.enqueue(parseScopeKey(e.scope), { id: e.id, author: e.event.pubkey, created_at: e.created_at });
    if (turns.length || waiting.length) this.o.logger.info({ evt: "queue.recovered", events: waiting.length, turns: turns.length });
    this.armTimer();
    this.wake();
    return { events: waiting.length, turns: turns.length };
  }

  /** Counts for metrics and `!status`: queued = events waiting, including those of pending retries. */
  depth(): { inFlight: number; queued: number; scopes: number; retrying: number } {
    let retrying = 0;
    let retryEvents = 0;
    for (const s of this.scopes.values()) if (s.retry) [retrying, retryEvents] = [retrying + 1, retryEvents + s.retry.size];
    return { inFlight: this.inFlight, queued: this.totalWaiting + retryEvents, scopes: this.scopes.size, retrying };
  }

  /** Accepted events waiting (queued or due for a retry) per channel, for the status page. */
  depthByChannel(): Map<string, number> {
    const by = new Map<string, number>();
    for (const s of this.scopes.values()) {
      const n = s.waiting.length + (s.retry?.size ?? 0);
      if (n > 0) by.set(s.scope.channel, (by.get(s.scope.channel) ?? 0) + n);
    }
    return by;
  }

  /** Earliest time a pending retry comes due (unix ms), if any. */
  nextRetryAt(): number | undefined {
    let at: number | undefined;
    for (const s of this.scopes.values()) if (s.retry && (at === undefined || s.retry.dueAt < at)) at = s.retry.dueAt;
    return at;
  }

  /** Coalesced and deferred to a microtask so the owner's `next()` never runs inside our own state changes. */
  private wake(): void {
    if (!this.o.onWake || this.wakePending) return;
    this.wakePending = true;
    queueMicrotask(() => {
      this.wakePending = false;
      this.o.onWake?.();
    });
  }

  private armTimer(): void {
    if (!this.o.onWake) return;
    // Only future retries: one already due is taken by the next `next()` after a wake.
    const now = this.o.now();
    let at: number | undefined;
    for (const s of this.scopes.values())
      if (s.retry && s.retry.dueAt > now && (at === undefined || s.retry.dueAt < at)) at = s.retry.dueAt;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = undefined;
    if (at === undefined) return;
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = undefined;
      this.wake();
      this.armTimer();
    }, at - now);
    this.wakeTimer.unref();
  }

  /** Announces pending refusals and stops timers; the store stays open (its owner closes it). */
  close(): void {
    this.refusals.flush();
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = undefined;
  }
}
