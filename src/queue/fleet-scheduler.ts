/**
 * The queue of one daemon in a fleet (`state.backend: postgres`): the same duties as the
 * single-daemon Scheduler — one turn in flight per scope, arrivals batched into the next
 * turn, `agent.max_concurrent`, retries with backoff, a failure notice when a turn gives
 * up — but the work is shared through PostgreSQL, and a scope is run only by the daemon
 * that holds its lease (pg-leases.ts).
 *
 * A loop (woken by arrivals and turn ends, and every `pollMs`) renews this daemon's
 * leases, claims scopes with waiting work while it has free slots, and prepares each
 * held idle scope's next batch; `next()` hands the prepared batches to the daemon.
 * A scope taken over from a daemon that died resumes its unfinished turn as a recovered
 * retry; the replies that daemon recorded are first confirmed with the relay, so what it
 * already published is not published again. A daemon that cannot renew its leases for a
 * lease period stops its turns (`onLost`): by then another daemon may hold them.
 */
import type { Event } from "nostr-tools";
import { Backoff, sleep } from "../base/backoff.js";
import type { Logger } from "../base/log.js";
import { DEFAULT_TURN_RETRY, turnRetryBackoff, type Batch, type FinalFailure, type TurnRetryPacing } from "./scheduler.js";
import { RefusalCoalescer, type Refusal } from "./refusals.js";
import { parseScopeKey, scopeKey, scopeOf, type Scope, type SessionScope } from "./scope.js";
import type { PostgresStore } from "./pg-store.js";
import { FLEET_LEASE_MS, type DaemonInfo } from "./pg-leases.js";
import type { TurnRecord } from "./store.js";

export interface FleetSchedulerOptions {
  store: PostgresStore;
  daemon: DaemonInfo;
  logger: Logger;
  sessionScope: SessionScope;
  maxConcurrent: number;
  batchSize?: number;
  maxAttempts?: number;
  /** Waiting events per scope across the fleet; above it the oldest are refused with a notice. Default 500. */
  scopeCap?: number;
  /** As the single scheduler's (`TurnRetryPacing`); the due time is on the database's clock. */
  backoff?: TurnRetryPacing;
  /** Lease period; renewed every third of it. Default 30 s. */
  leaseMs?: number;
  /** Look for work at least this often even without a wake. Default 1 s. */
  pollMs?: number;
  /** Which of these event ids the relay has stored (a takeover's recorded replies). */
  confirmPublished(ids: string[]): Promise<string[]>;
  onFinalFailure?(f: FinalFailure): void;
  /** Events refused by the scope cap (announced by the daemon that accepted the event that crossed it). */
  onRefused?(r: Refusal): void;
  /** Batches are ready: call `next()`. */
  onWake?(): void;
  /**
   * The scope was rotated (`!rotate`, possibly through another daemon) since this daemon
   * last ran it: end its agent session here before the next turn. Awaited.
   */
  onRotate?(scopeKey: string): Promise<void>;
  /** These running turns must stop: their scope is no longer ours, or the owner cancelled them elsewhere. */
  onLost?(turnIds: number[]): void;
}

interface Held {
  scope: Scope;
  /** `cancelled`: ended in the database (its message deleted); the slot is held until the agent side reports the end. */
  running?: { turnId: number; attempts: number; recovered: boolean; cancelled?: boolean };
  /** A batch is being prepared or waits in `ready`. */
  busy: boolean;
}

export class FleetScheduler {
  private readonly held = new Map<string, Held>();
  private readonly byTurn = new Map<number, Held>();
  private readonly ready: Batch[] = [];
  /** Writes for a turn (replies, its end), in order; the lease is released after them. */
  private readonly writes = new Map<number, Promise<unknown>>();
  private loop?: Promise<void>;
  private again = false;
  private timer?: NodeJS.Timeout;
  private closed = false;
  /** Stopping: keep renewing what we hold, claim and start nothing new. */
  private draining = false;
  private lastRenewAt = 0;
  private lastRenewOk = Date.now();
  private fleetQueued = 0;
  private fleetByChannel = new Map<string, number>();
  private readonly o: Required<Omit<FleetSchedulerOptions, "onFinalFailure" | "onWake" | "onLost" | "onRefused" | "onRotate">> &
    FleetSchedulerOptions;
  /** Events of the batches handed out and not ended yet (for storedEvent). */
  private readonly batchEvents = new Map<string, { turnId: number; event: Event }>();
  /** Per scope this daemon has run: the rotation count its session was made under. */
  private readonly rotationSeen = new Map<string, number>();
  private readonly refusals: RefusalCoalescer;
  /** A failed turn's wait before its next attempt, as the single scheduler's. */
  private readonly retryDelay: Backoff;

  constructor(opts: FleetSchedulerOptions) {
    this.refusals = new RefusalCoalescer(opts.logger, opts.onRefused);
    this.o = { batchSize: 50, maxAttempts: 3, scopeCap: 500, backoff: DEFAULT_TURN_RETRY, leaseMs: FLEET_LEASE_MS, pollMs: 1_000, ...opts };
    this.retryDelay = turnRetryBackoff(this.o.backoff);
  }

  get daemonId(): string {
    return this.o.daemon.id;
  }

  scopeOf(ev: Event, channel: string): Scope {
    return scopeOf(ev, channel, this.o.sessionScope);
  }

  /**
   * Stores an accepted event once for the fleet; false when a daemon (this one or another)
   * has it already. `scope` overrides where it goes (an edit goes to its message's scope).
   */
  async accept(ev: Event, channel: string, scope: Scope = this.scopeOf(ev, channel)): Promise<boolean> {
    const fresh = await this.o.store.accept(ev, channel, scope.key);
    if (fresh)
      for (const old of await this.o.store.refuseOverCap(scope.key, this.o.scopeCap))
        this.refusals.add(scope.key, scope.channel, "scope-cap", old);
    // Also for a duplicate: the daemon holding the scope hears the event too and looks now.
    this.kick();
    return fresh;
  }

  /** Starts the loop (the fleet's counterpart of the single scheduler's restart recovery). */
  recover(): { events: number; turns: number } {
    this.kick();
    return { events: 0, turns: 0 };
  }

  next(): Batch | null {
    return this.ready.shift() ?? null;
  }

  /** Before publishing a reply: its id, recorded only while this daemon holds the scope (LeaseLostError otherwise). */
  recordBeforePublish(turnId: number, eventId: string): Promise<void> {
    return this.o.store.recordReplyAsHolder(turnId, eventId, this.o.daemon.id);
  }

  recordReply(turnId: number, eventId: string): void {
    this.chain(turnId, () => this.o.store.recordReply(turnId, eventId));
  }

  complete(turnId: number): boolean {
    const h = this.finish(turnId);
    if (!h) return false;
    // Cancelled: its end is in the database already; the scope may go on.
    if (h.cancelled) {
      this.kick();
      return true;
    }
    this.chain(
      turnId,
      () =>
        this.o.store.updateTurnFrom(
          "running",
          { id: turnId, state: "done", attempts: h.attempts, next_attempt_at: 0, recovered: h.recovered ? 1 : 0, error: null },
          this.o.daemon.id,
        ),
      h.held,
    );
    return true;
  }

  fail(turnId: number, error: string, opts: { retry?: boolean } = {}): "retry" | "failed" | "ignored" {
    const r = this.finish(turnId);
    if (!r) return "ignored";
    if (r.cancelled) {
      this.kick();
      return "ignored";
    }
    const canRetry = opts.retry !== false && !r.recovered && r.attempts < this.o.maxAttempts;
    if (canRetry) {
      const delay = this.retryDelay.delayFor(r.attempts - 1);
      this.o.logger.warn({ evt: "queue.turn_retry", turn: turnId, scope: r.scope.key, attempt: r.attempts, retry_in_ms: delay, error });
      // Due by the database's clock, so a daemon with a drifting clock retries neither early nor late.
      this.chain(
        turnId,
        () =>
          this.o.store.updateTurnFrom(
            "running",
            { id: turnId, state: "queued", attempts: r.attempts, next_attempt_at: 0, recovered: 0, error },
            this.o.daemon.id,
            delay,
          ),
        r.held,
      );
      return "retry";
    }
    this.o.logger.error({ evt: "queue.turn_failed", turn: turnId, scope: r.scope.key, attempts: r.attempts, error });
    let ended = false;
    this.chain(turnId, async () => {
      ended = await this.o.store.updateTurnFrom(
        "running",
        { id: turnId, state: "failed", attempts: r.attempts, next_attempt_at: 0, recovered: r.recovered ? 1 : 0, error },
        this.o.daemon.id,
      );
    });
    // A separate write, so a retry after a lost connection cannot skip the notice.
    this.chain(
      turnId,
      async () => {
        if (!ended) return;
        const events = (await this.o.store.eventsOfTurn(turnId)).map((e) => e.event);
        const publishedReplyIds = (await this.o.store.turn(turnId))?.reply_ids ?? [];
        this.o.onFinalFailure?.({ turnId, scope: r.scope, events, error, attempts: r.attempts, publishedReplyIds });
      },
      r.held,
    );
    return "failed";
  }

  /** `!cancel` for the fleet: ends the target's work in the database; returns this daemon's running turns among it. */
  async cancel(target: { channel: string; thread?: string }): Promise<{ runningTurnIds: number[]; ended: number }> {
    const keys =
      this.o.sessionScope === "channel"
        ? [scopeKey(target.channel)]
        : target.thread
          ? [scopeKey(target.channel, target.thread)]
          : undefined;
    const { running, ended } = await this.o.store.cancelScopes(target.channel, keys);
    const mine = running.filter((id) => this.byTurn.has(id));
    for (const id of mine) this.finish(id);
    if (ended) this.o.logger.info({ evt: "queue.cancelled", channel: target.channel, thread: target.thread ?? null, ended, running });
    this.kick();
    return { runningTurnIds: mine, ended };
  }

  /** An event of a batch this daemon runs (an edit's target, for its reply anchor). */
  storedEvent(id: string): Event | undefined {
    return this.batchEvents.get(id)?.event;
  }

  /**
   * The turn this daemon runs in the scope, if it holds the scope. Every daemon hears a
   * mid-turn message; only the holder finds the turn here, so only it joins the message.
   */
  runningTurn(scopeKey: string): number | undefined {
    const r = this.held.get(scopeKey)?.running;
    return r && !r.cancelled ? r.turnId : undefined;
  }

  /**
   * A waiting event of the turn's scope joins the running turn, in the database and fenced
   * by the lease, then `deliver` hands it to the agent. The turn may end while the join is
   * written (deliver says false): the event waits again, written before the turn's end,
   * which is queued behind this write and would otherwise end the event with it. Returns
   * false: nothing has joined yet (the single scheduler's true means "joined, deliver now").
   */
  joinRunning(turnId: number, eventId: string, deliver: () => boolean): false {
    const r = this.byTurn.get(turnId)?.running;
    if (r?.turnId !== turnId || r.cancelled) return false;
    let joined: string[] | undefined;
    let delivered: boolean | undefined;
    this.chain(turnId, async () => {
      // Written so that a retry after a lost connection repeats only what is missing.
      joined ??= await this.o.store.joinTurn(turnId, [eventId], this.o.daemon.id);
      if (!joined.length) return;
      delivered ??= this.byTurn.get(turnId)?.running?.turnId === turnId && deliver();
      if (delivered) return;
      await this.o.store.leaveTurn(turnId, joined, this.o.daemon.id);
      this.kick();
    });
    return false;
  }

  /** Events that joined the turn but could not be given to the agent wait for the scope's next turn. */
  leaveRunning(turnId: number, eventIds: readonly string[]): void {
    if (!eventIds.length) return;
    this.chain(turnId, async () => {
      await this.o.store.leaveTurn(turnId, eventIds, this.o.daemon.id);
      this.kick();
    });
  }

  /** Its author deleted a waiting event: it leaves the fleet's queue (whichever daemon hears it first). */
  dropWaiting(_scopeKey: string, eventId: string): Promise<boolean> {
    return this.o.store.dropWaiting(eventId);
  }

  /**
   * Ends one running turn of this daemon as cancelled (its only trigger was deleted by its
   * author); the caller stops it at the agent. Its scope starts nothing new until the agent
   * side reports the end (complete or fail). False when it does not run here, or ended.
   */
  async cancelRunning(turnId: number, reason: string): Promise<boolean> {
    const r = this.byTurn.get(turnId)?.running;
    if (r?.turnId !== turnId || r.cancelled) return false;
    const update = {
      id: turnId,
      state: "cancelled" as const,
      attempts: r.attempts,
      next_attempt_at: 0,
      recovered: r.recovered ? 1 : 0,
      error: reason,
    };
    if (!(await this.o.store.updateTurnFrom("running", update, this.o.daemon.id))) return false;
    if (this.byTurn.get(turnId)?.running === r) r.cancelled = true;
    return true;
  }

  /** Waiting mentions per channel across the fleet, as of the last lease renewal (for /status). */
  depthByChannel(): Map<string, number> {
    return new Map(this.fleetByChannel);
  }

  depth(): { inFlight: number; queued: number; scopes: number; retrying: number } {
    return { inFlight: this.byTurn.size, queued: this.fleetQueued, scopes: this.held.size, retrying: 0 };
  }

  /** This daemon's leases (scope keys), for /status and /metrics. */
  leases(): string[] {
    return [...this.held.keys()];
  }

  /** The daemon is stopping: nothing new is claimed or prepared; leases are still renewed while turns finish. */
  stopClaiming(): void {
    this.draining = true;
  }

  /**
   * Stops the loop, waits for pending writes and leaves the fleet: this daemon's leases
   * end now. Batches prepared but never started go back to the queue as they were, so
   * the daemon that takes them does not spend their one recovery on them.
   */
  async close(): Promise<void> {
    this.refusals.flush();
    this.draining = true;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.loop?.catch(() => undefined);
    for (const b of this.ready.splice(0)) {
      const r = this.finish(b.turnId);
      if (!r) continue;
      const back = {
        id: b.turnId,
        state: "queued" as const,
        attempts: b.attempt - 1,
        next_attempt_at: 0,
        recovered: b.recovered ? 1 : 0,
        error: null,
      };
      await this.o.store
        .updateTurnFrom("running", back, this.o.daemon.id)
        .catch((err: unknown) => this.o.logger.warn({ evt: "queue.store_write_failed", turn: b.turnId, err: String(err) }));
    }
    await Promise.allSettled([...this.writes.values()]);
    await this.o.store.leases
      .leave(this.o.daemon.id)
      .catch((err: unknown) => this.o.logger.warn({ evt: "queue.fleet_leave_failed", err: String(err) }));
  }

  private finish(turnId: number): (NonNullable<Held["running"]> & { scope: Scope; held: Held }) | undefined {
    const h = this.byTurn.get(turnId);
    if (!h?.running || h.running.turnId !== turnId) return undefined;
    const r = { ...h.running, scope: h.scope, held: h };
    for (const [id, b] of this.batchEvents) if (b.turnId === turnId) this.batchEvents.delete(id);
    this.byTurn.delete(turnId);
    h.running = undefined;
    return r;
  }

  /**
   * Runs `write` after the turn's earlier writes. `end`: the turn's last write; its scope
   * is not looked at again until the write is done (else the loop would find the turn
   * still "running" and resume it), then the loop looks for the scope's next work.
   */
  private chain(turnId: number, write: () => Promise<unknown>, end?: Held): void {
    if (end) end.busy = true;
    const before = this.writes.get(turnId) ?? Promise.resolve();
    const p = before
      .then(() => this.persist(turnId, write))
      .catch((err: unknown) =>
        this.o.logger.error({ evt: "queue.store_write_failed", turn: turnId, err: err instanceof Error ? err.message : String(err) }),
      );
    this.writes.set(turnId, p);
    if (end)
      void p.then(() => {
        if (this.writes.get(turnId) === p) this.writes.delete(turnId);
        end.busy = false;
        this.kick();
      });
  }

  /**
   * A turn's write, retried while the database is away for up to a lease period; past
   * that the scope may be another daemon's, which resumes the turn from what was stored.
   */
  private async persist(turnId: number, write: () => Promise<unknown>): Promise<void> {
    const deadline = Date.now() + this.o.leaseMs;
    const pace = new Backoff({ baseMs: 100, capMs: 2000, jitter: 0 });
    for (;;) {
      try {
        await write();
        return;
      } catch (err) {
        const delay = pace.next();
        if (this.closed || Date.now() + delay > deadline) throw err;
        this.o.logger.warn({
          evt: "queue.store_write_retry",
          turn: turnId,
          err: err instanceof Error ? err.message : String(err),
          retry_ms: delay,
        });
        await sleep(delay);
      }
    }
  }

  /** Wakes the loop now (coalesced: one pass at a time, one more if woken during it). */
  private kick(): void {
    if (this.closed) return;
    if (this.loop) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.loop = this.pass()
      .catch((err: unknown) =>
        this.o.logger.warn({ evt: "queue.fleet_pass_failed", err: err instanceof Error ? err.message : String(err) }),
      )
      .finally(() => {
        this.loop = undefined;
        if (this.closed) return;
        if (this.again) {
          this.again = false;
          this.kick();
        } else {
          this.timer = setTimeout(() => this.kick(), this.o.pollMs);
          this.timer.unref();
        }
      });
  }

  private async pass(): Promise<void> {
    const { store, daemon, leaseMs } = this.o;
    const now = Date.now();
    // A pass runs pollMs after the last one ended: renewing a poll early keeps the gap within
    // leaseMs / 3, the 10 s in which a turn cancelled by another daemon stops here (docs/fleet.md).
    if (now - this.lastRenewAt >= leaseMs / 3 - this.o.pollMs) await this.renew(now);
    if (this.draining) return;
    // Held scopes with nothing running and nothing prepared: find their next work (or let them go).
    for (const h of [...this.held.values()]) if (!h.running && !h.busy) await this.prepare(h, null);
    // byTurn holds the prepared batches too: each counts against max_concurrent from the start.
    const free = this.o.maxConcurrent - this.byTurn.size;
    if (free > 0) {
      const claimed = await store.leases.claim(daemon.id, free, leaseMs);
      for (const c of claimed) {
        if (c.from)
          this.o.logger.info({ evt: "queue.scope_taken_over", scope: c.key, from: c.from }, "took over a scope whose lease expired");
        const h: Held = { scope: parseScopeKey(c.key), busy: false };
        this.held.set(c.key, h);
        await this.prepare(h, c.from);
      }
    }
    if (this.ready.length) this.o.onWake?.();
  }

  private async renew(now: number): Promise<void> {
    const { store, daemon, leaseMs } = this.o;
    this.lastRenewAt = now;
    try {
      await store.leases.heartbeat(daemon);
      const kept = new Set(await store.leases.renew(daemon.id, leaseMs));
      this.lastRenewOk = now;
      const lost = [...this.held.keys()].filter((k) => !kept.has(k));
      // Turns cancelled here already wait for the agent side's end, not for this.
      const cancelled = await store.notRunning([...this.byTurn].filter(([, h]) => !h.running?.cancelled).map(([id]) => id));
      this.drop(lost, cancelled, "taken over by another daemon");
      this.fleetByChannel = await store.leases.queueDepthByChannel();
      this.fleetQueued = [...this.fleetByChannel.values()].reduce((a, b) => a + b, 0);
    } catch (err) {
      this.o.logger.warn(
        { evt: "queue.lease_renew_failed", err: err instanceof Error ? err.message : String(err) },
        "could not renew scope leases",
      );
      // Past the lease period another daemon may hold our scopes: stop acting on them.
      if (now - this.lastRenewOk > leaseMs * 0.8) this.drop([...this.held.keys()], [], "leases could not be renewed in time");
    }
  }

  /** Forgets scopes we no longer hold and stops their running turns (and turns cancelled elsewhere). */
  private drop(keys: string[], cancelledTurns: number[], why: string): void {
    const stop: number[] = [...cancelledTurns.filter((id) => this.byTurn.has(id))];
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
    if (stop.length) this.o.onLost?.(stop);
  }

  /** Prepares a held scope's next batch, or releases the scope when it has none. */
  private async prepare(h: Held, from: string | null): Promise<void> {
    const { store, daemon } = this.o;
    h.busy = true;
    try {
      const work = await store.scopeWork(h.scope.key, this.o.batchSize);
      let batch: Batch | undefined;
      // A retry not yet due: the scope is released until then (claims look at due retries only).
      if (work.turn) batch = work.turn.state === "queued" && !work.due ? undefined : await this.resume(h, work.turn, from);
      else if (work.waiting.length) {
        const turnId = await store.startTurn(h.scope.key, h.scope.channel, work.waiting);
        batch = await this.batchOf(h, turnId, 1, false, []);
        if (!batch.events.length) {
          // Another daemon ended them since they were read (deleted by their author, `!cancel`).
          this.finish(turnId);
          await store.updateTurnFrom(
            "running",
            { id: turnId, state: "cancelled", attempts: 1, next_attempt_at: 0, recovered: 0, error: "its events ended before it started" },
            daemon.id,
          );
          batch = undefined;
        }
      }
      if (batch) {
        await this.followRotation(h.scope);
        this.ready.push(batch);
        return;
      }
      this.held.delete(h.scope.key);
      await store.leases.release(daemon.id, h.scope.key);
    } finally {
      h.busy = false;
    }
  }

  /** Ends this daemon's session of the scope when the fleet rotated it since (see onRotate). */
  private async followRotation(scope: Scope): Promise<void> {
    const epoch = await this.o.store.rotationEpoch(scope.key, scope.channel);
    const seen = this.rotationSeen.get(scope.key);
    this.rotationSeen.set(scope.key, epoch);
    // Never run here before: there is no session of it to end.
    if (seen !== undefined && seen !== epoch) await this.o.onRotate?.(scope.key);
  }

  /** An open turn of a scope we now hold: a due retry, or a turn its holder left running. */
  private async resume(h: Held, t: TurnRecord, from: string | null): Promise<Batch | undefined> {
    const { store } = this.o;
    const leftRunning = t.state === "running";
    const recovered = leftRunning || t.recovered === 1;
    if (leftRunning && (t.recovered === 1 || t.attempts >= this.o.maxAttempts)) {
      // Its one recovery was spent already: give up with a notice, as a restart would.
      const error = `the daemon running this turn stopped${from ? ` (${from})` : ""} and its retry was spent`;
      if (
        await store.updateTurnFrom(
          "running",
          { id: t.id, state: "failed", attempts: t.attempts, next_attempt_at: 0, recovered: 1, error },
          this.o.daemon.id,
        )
      ) {
        const events = (await store.eventsOfTurn(t.id)).map((e) => e.event);
        this.o.onFinalFailure?.({ turnId: t.id, scope: h.scope, events, error, attempts: t.attempts, publishedReplyIds: t.reply_ids });
      }
      return undefined;
    }
    const attempts = t.attempts + 1;
    if (
      !(await store.updateTurnFrom(
        t.state,
        { id: t.id, state: "running", attempts, next_attempt_at: 0, recovered: recovered ? 1 : 0, error: t.error },
        this.o.daemon.id,
      ))
    )
      return undefined;
    // Ids recorded before publishing: only those the relay has were really published.
    const published = t.reply_ids.length ? await this.o.confirmPublished(t.reply_ids) : [];
    if (leftRunning)
      this.o.logger.info({
        evt: "queue.turn_resumed",
        turn: t.id,
        scope: h.scope.key,
        from,
        recorded: t.reply_ids.length,
        published: published.length,
      });
    return this.batchOf(h, t.id, attempts, recovered, published);
  }

  private async batchOf(h: Held, turnId: number, attempt: number, recovered: boolean, publishedReplyIds: string[]): Promise<Batch> {
    const stored = await this.o.store.eventsOfTurn(turnId);
    const events = stored.map((e) => e.event);
    h.running = { turnId, attempts: attempt, recovered };
    this.byTurn.set(turnId, h);
    for (const e of events) this.batchEvents.set(e.id, { turnId, event: e });
    // Messages steered in after the last reply the relay has: they still need an answer.
    const unansweredJoins = stored.filter((e) => e.joined_after !== null && e.joined_after >= publishedReplyIds.length).map((e) => e.event);
    return { turnId, scope: h.scope, events, attempt, recovered, publishedReplyIds, unansweredJoins };
  }
}
