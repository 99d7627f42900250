/**
 * One WebSocket to a Buzz relay (docs/protocol.md §1 and §5): NIP-42 auth before any REQ,
 * re-challenges answered, `auth-required:` CLOSED answered by one re-auth, reconnect forever
 * with jittered backoff, ping/pong liveness, `rate-limited: … retry in Ns` honoured (from an
 * `OK false`, a `CLOSED` or a `NOTICE`), and publishes that await `OK`. Subscriptions are
 * registered as filter *functions* so every (re)send carries a fresh `since`. The frame
 * budget and the rate-limit pause may be shared with the identity's other sockets and its
 * HTTP bridge (Buzz counts them in one bucket). A socket the relay closes cleanly after a
 * working session (its connection lifetime) is replaced at once, not after a backoff; a
 * planned replacement is `recycle()` (at a quiet moment) or `retire()` (once its
 * successor is subscribed: relay/lifetime.ts).
 */
import { EventEmitter } from "node:events";
import WebSocket from "ws";
import type { Event } from "nostr-tools";
import type { Filter } from "nostr-tools/filter";
import type { Logger } from "../base/log.js";
import { silentLogger } from "../base/log.js";
import { authTemplate, relayTagUrl } from "./auth.js";
import { Backoff, type BackoffOptions, reasonPrefix, sleep } from "../base/backoff.js";
import { watchLiveness } from "./liveness.js";
import type { ShortLives } from "./short-lives.js";
import { parseRelayFrame } from "../nostr/frames.js";
import { LogThrottle } from "../base/log-throttle.js";
import { DISCONNECTED, OkWaiters } from "./ok-waiters.js";
import { outcomeFromOk, type PublishOutcome } from "./outcome.js";
import { FrameBudget, priorityOfKind, type FramePriority, type FrameQuota, BUZZ_FRAME_QUOTA } from "./frame-budget.js";
import { RatePause } from "./rate-pause.js";
import { killNow, replyFaultFor } from "./faults.js";
import { RelayQueryError } from "./errors.js";
import { pubkeyOf } from "../config/keys.js";
import { signEvent } from "../nostr/verify.js";
import { refusalAdvice } from "./auth-advice.js";

export type ConnectionState = "idle" | "connecting" | "authenticated" | "subscribed" | "closed" | "stopped";

/** The reason a publish on a socket being replaced is handed back: the client sends it on the new one. */
export const RETIRING = "connection being replaced";

export interface ConnectionOptions {
  url: string;
  secretKey: Uint8Array;
  logger?: Logger;
  /** Reconnect pacing. Default 1 s → 60 s, ±20 % (docs/protocol.md §5); tests use tens of ms. */
  backoff?: BackoffOptions;
  /** Connected this long → backoff starts again from the base. Default 60 s. */
  resetAfterMs?: number;
  /** WebSocket ping period. Default 30 s, like the relay's own heartbeat. */
  pingIntervalMs?: number;
  /** A ping unanswered this long means the link is dead. Default 10 s (buzz-acp PONG_TIMEOUT). */
  pongTimeoutMs?: number;
  /** Wait for the relay's AUTH challenge this long, then go on unauthenticated. Default 5 s. */
  challengeWaitMs?: number;
  /** Wait for the `OK` to our AUTH this long. Default 5 s. */
  authTimeoutMs?: number;
  /** Rate-limit pause when the relay gives no `retry in` hint. Default 5 s (buzz-acp). */
  defaultRateLimitMs?: number;
  /** Our outgoing frame budget (config `relay.frame_quota`). Default Buzz's 50 per 5 s; null = none. Ignored with `budget`. */
  frameQuota?: FrameQuota | null;
  /** A budget shared with the identity's other sockets and its HTTP calls; the owner stops it. */
  budget?: FrameBudget;
  /** A rate-limit pause shared likewise. */
  gate?: RatePause;
  /** Counters shared across the sockets a client replaces one by one. */
  metrics?: ConnectionMetrics;
  /** The pacing of sockets the relay ends within moments, shared by the client's sockets (short-lives.ts). */
  shortLives?: ShortLives;
}

export interface ConnectionMetrics {
  reconnects: number;
  reqFrames: number;
  closeFrames: number;
  eventFrames: number;
  authOk: number;
  authRefused: number;
  invalidFrames: number;
  rateLimited: number;
  dead: number;
  /** Sockets the relay closed cleanly after a working session (e.g. its connection lifetime). */
  relayClosed: number;
}

export function newConnectionMetrics(): ConnectionMetrics {
  return {
    reconnects: 0,
    reqFrames: 0,
    closeFrames: 0,
    eventFrames: 0,
    authOk: 0,
    authRefused: 0,
    invalidFrames: 0,
    rateLimited: 0,
    dead: 0,
    relayClosed: 0,
  };
}

export interface SendOptions {
  /** Wait this long for `OK`. Default 10 s. */
  timeoutMs?: number;
  /** Drop instead of waiting while rate-limited (typing). Default false. */
  droppable?: boolean;
  /** Place in the frame budget's queue; default by kind (reactions, typing/presence, the rest durable). */
  priority?: FramePriority;
}

interface Sub {
  filters: () => Filter[];
  open: boolean;
  /** Every REQ sent has been answered and the last answer was EOSE. */
  eosed: boolean;
  /** REQs sent on this socket not yet answered by EOSE or CLOSED: an EOSE settles only the last. */
  pending: number;
  authRetried: boolean;
}

/** What a RelayConnection emits, checked by tsc on emit/on/once/off. */
export interface ConnectionEvents {
  /** An EVENT on one of our subscriptions (not on a one-shot `query`). */
  event: [subId: string, ev: Event];
  /** The subscription's last REQ was answered by EOSE (or it has no filters to send). */
  eose: [subId: string];
  state: [state: ConnectionState, prev: ConnectionState];
  /** The relay refused our AUTH; the connection is closed and retried. */
  "auth-failed": [reason: string];
  /** The relay closed a subscription for a reason we do not retry. */
  "sub-closed": [subId: string, reason: string];
  /** No publish waits for its `OK` and no read for its `EOSE` any more: a quiet moment. */
  idle: [];
}

/** A socket the relay closes cleanly after this long authenticated is replaced at once (its lifetime ended). */
const WORKING_SESSION_MS = 1000;
let connectionSeq = 0;

export class RelayConnection extends EventEmitter<ConnectionEvents> {
  readonly url: string;
  readonly metrics: ConnectionMetrics;
  /** Names this connection's deferred REQs in a shared gate. */
  private readonly tag = `c${++connectionSeq}:`;
  private readonly log: Logger;
  private readonly throttle: LogThrottle;
  private readonly backoff: Backoff;
  private ws: WebSocket | undefined;
  private gen = 0;
  private _state: ConnectionState = "idle";
  private stopped = false;
  private authed = false;
  private challenge: string | undefined;
  private authInFlight: Promise<boolean> | undefined;
  private authChallenge: string | undefined;
  private subs = new Map<string, Sub>();
  private okWaiters = new OkWaiters();
  /** One-shot reads over the socket (`query`), by subscription id. */
  private readonly reads = new Map<string, { events: Event[]; done: (closed?: string) => void }>();
  private readSeq = 0;
  /** Ids of EVENTs sent and still waiting for their OK (not AUTH). */
  private readonly eventsInFlight = new Set<string>();
  /** Test-only (./faults.ts): OKs to drop as if lost on the wire. */
  private swallowOk = new Set<string>();
  private readonly gate: RatePause;
  private readonly ownsGate: boolean;
  readonly budget: FrameBudget;
  private readonly ownsBudget: boolean;
  /** When the current socket authenticated (ms since epoch); undefined while not authenticated. */
  authenticatedAt: number | undefined;
  /** When the current socket opened. */
  openedAt: number | undefined;
  /** Set by `retire()`: no new publish or read starts here; the socket closes once quiet. */
  private retiring = false;
  /** Set by `recycle()`: the next close is planned and reconnects at once. */
  private planned = false;
  private timers = new Set<NodeJS.Timeout>();
  private stopLiveness: (() => void) | undefined;
  /** Last refusal of our AUTH, for /readyz and doctor. */
  lastAuthError: string | undefined;
  /** The relay sent no AUTH challenge in time and the connection went on unauthenticated (doctor says so). */
  unchallenged = false;

  constructor(private readonly opts: ConnectionOptions) {
    super();
    this.url = opts.url;
    relayTagUrl(opts.url); // validates early with a usable message
    this.log = (opts.logger ?? silentLogger()).child({ relay: opts.url });
    this.throttle = new LogThrottle(this.log, { summaryEvt: "relay.log_suppressed" });
    this.backoff = new Backoff(opts.backoff);
    this.metrics = opts.metrics ?? newConnectionMetrics();
    this.ownsGate = !opts.gate;
    this.gate = opts.gate ?? new RatePause(opts.defaultRateLimitMs);
    this.ownsBudget = !opts.budget;
    this.budget = opts.budget ?? new FrameBudget(opts.frameQuota === undefined ? BUZZ_FRAME_QUOTA : opts.frameQuota);
  }

  get state(): ConnectionState {
    return this._state;
  }

  get authenticated(): boolean {
    return this.authed;
  }

  /** Milliseconds the relay asked us to hold back for; 0 when not limited. */
  get rateLimitedFor(): number {
    return this.gate.remaining;
  }

  start(): void {
    if (this._state !== "idle") return;
    this.connect();
  }

  /** A publish waits for its `OK` or a read for its `EOSE` on this socket. */
  get busy(): boolean {
    return this.eventsInFlight.size > 0 || this.reads.size > 0;
  }

  get isRetiring(): boolean {
    return this.retiring;
  }

  /**
   * Make-before-break's end: a successor socket is subscribed, so this one takes no new
   * publish or read and closes as soon as what it carries is answered, or after `graceMs`.
   */
  retire(graceMs: number): void {
    if (this.retiring || this.stopped) return;
    this.retiring = true;
    const done = () => {
      clearTimeout(t);
      this.off("idle", done);
      this.stop();
    };
    const t = setTimeout(done, graceMs);
    if (!this.busy) return done();
    this.on("idle", done);
  }

  /**
   * Break-before-make at a quiet moment: closes the socket now and connects again at once
   * (re-authenticating and resubscribing with `since`). Used when no second socket can be
   * opened within the budget before the relay's deadline.
   */
  recycle(): void {
    if (this.stopped || !this.ws) return;
    this.planned = true;
    this.ws.close(1000, "reconnecting before the relay's connection lifetime ends");
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    if (this.ownsGate) this.gate.stop();
    else this.gate.drop(this.tag);
    if (this.ownsBudget) this.budget.stop();
    this.teardown();
    this.ws?.terminate();
    this.ws = undefined;
    this.setState("stopped");
  }

  /** Registers (or replaces, same id = one frame) a subscription; sent now if authenticated, else after auth. */
  setSubscription(id: string, filters: () => Filter[]): void {
    const prev = this.subs.get(id);
    this.subs.set(id, { filters, open: prev?.open ?? false, eosed: false, pending: prev?.pending ?? 0, authRetried: false });
    if (this.authed) void this.sendReq(id);
  }

  removeSubscription(id: string): void {
    const sub = this.subs.get(id);
    this.subs.delete(id);
    if (sub?.open && this.authed && this.sendFrame(["CLOSE", id])) {
      this.metrics.closeFrames++;
      this.budget.note();
    }
  }

  /** Resolves true once authenticated (false on timeout or stop). */
  waitAuthenticated(timeoutMs: number): Promise<boolean> {
    if (this.authed) return Promise.resolve(true);
    if (this.stopped) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(t);
        this.off("state", onState);
        resolve(ok);
      };
      const onState = (s: ConnectionState) =>
        s === "authenticated" || s === "subscribed" ? done(true) : s === "stopped" ? done(false) : undefined;
      const t = setTimeout(() => done(false), timeoutMs);
      this.on("state", onState);
    });
  }

  /**
   * A one-shot read over the WebSocket, for relays without an HTTP bridge: `REQ` with its own
   * subscription id, the stored events up to `EOSE`, then `CLOSE`. Both frames go through the
   * frame budget. Rejects with RelayQueryError when the relay closes the read or the socket
   * goes, or nothing answers within `timeoutMs`.
   */
  async query(filters: Filter[], timeoutMs = 15_000): Promise<Event[]> {
    if (this.retiring) throw new RelayQueryError("connection lost during the read");
    if (!this.authed && !(await this.waitAuthenticated(timeoutMs))) throw new RelayQueryError("not connected to the relay");
    await this.budget.acquire("durable");
    const id = `read-${++this.readSeq}`;
    const gen = this.gen;
    return new Promise<Event[]>((resolve, reject) => {
      const events: Event[] = [];
      const timer = setTimeout(() => done("no EOSE within " + timeoutMs + " ms"), timeoutMs);
      const done = (closed?: string) => {
        clearTimeout(timer);
        if (!this.reads.delete(id)) return;
        this.checkIdle();
        if (closed === undefined) {
          // The relay keeps a subscription open after EOSE until told otherwise.
          void this.budget.acquire("control").then(() => gen === this.gen && this.sendFrame(["CLOSE", id]) && this.metrics.closeFrames++);
          resolve(events);
        } else
          reject(new RelayQueryError(closed === DISCONNECTED ? "connection lost during the read" : `relay closed the read: ${closed}`));
      };
      this.reads.set(id, { events, done });
      if (!this.sendFrame(["REQ", id, ...filters])) done(DISCONNECTED);
      else this.metrics.reqFrames++;
    });
  }

  /** One publish attempt: send `EVENT`, await `OK`. Never rejects. */
  async sendEvent(ev: Event, opts: SendOptions = {}): Promise<PublishOutcome> {
    const timeoutMs = opts.timeoutMs ?? 10_000;
    while (this.rateLimitedFor > 0) {
      if (opts.droppable) return { status: "dropped", reason: `rate-limited for another ${this.rateLimitedFor} ms` };
      await sleep(this.rateLimitedFor);
    }
    if (this.retiring) return { status: "disconnected", reason: RETIRING };
    if (!this.authed || !this.ws) return { status: "disconnected", reason: "not connected to the relay" };
    const priority = opts.priority ?? priorityOfKind(ev.kind);
    if (!(await this.budget.acquire(priority))) {
      this.throttle.log(
        "info",
        "relay.signal_dropped",
        { evt: "relay.signal_dropped", event: ev.id, kind: ev.kind, reason: "frame budget short" },
        "typing/presence not sent: the frame budget is kept for replies",
      );
      return { status: "dropped", reason: "frame budget short" };
    }
    // The relay may have asked us to hold back while this frame waited for its slot.
    while (this.rateLimitedFor > 0) {
      if (opts.droppable) return { status: "dropped", reason: `rate-limited for another ${this.rateLimitedFor} ms` };
      await sleep(this.rateLimitedFor);
    }
    if (!this.authed || !this.ws) return { status: "disconnected", reason: "not connected to the relay" };
    const fault = replyFaultFor(ev);
    if (fault === "swallow") this.swallowOk.add(ev.id);
    const outcome = new Promise<PublishOutcome>((resolve) =>
      this.okWaiters.add(
        ev.id,
        timeoutMs,
        (ok, reason) => {
          if (fault === "kill" && ok) killNow();
          resolve(reason === DISCONNECTED ? { status: "disconnected", reason: "connection lost before OK" } : outcomeFromOk(ok, reason));
        },
        () => resolve({ status: "timeout", reason: `no OK within ${timeoutMs} ms` }),
      ),
    );
    if (this.sendFrame(["EVENT", ev])) this.metrics.eventFrames++;
    this.eventsInFlight.add(ev.id);
    const o = await outcome.finally(() => {
      this.eventsInFlight.delete(ev.id);
      this.checkIdle();
    });
    if (o.status === "refused") this.onRefusal(o.reason ?? "");
    return o;
  }

  private checkIdle(): void {
    if (!this.busy) this.emit("idle");
  }

  private onRefusal(reason: string): void {
    const p = reasonPrefix(reason);
    if (p === "rate-limited") this.rateLimit(reason);
    else if (p === "auth-required" && this.challenge) void this.authenticate();
  }

  private connect(): void {
    if (this.stopped) return;
    const gen = ++this.gen;
    this.setState("connecting");
    const ws = new WebSocket(this.url, { handshakeTimeout: 10_000 });
    this.ws = ws;
    ws.on("open", () => gen === this.gen && this.onOpen());
    ws.on("message", (data) => gen === this.gen && this.onMessage(data.toString()));
    ws.on("error", (err) => gen === this.gen && this.throttle.warn("relay.socket_error", { err: err.message }, "relay socket error"));
    ws.on("close", (code, reason) => gen === this.gen && this.onClose(code, reason.toString()));
  }

  private onOpen(): void {
    this.openedAt = Date.now();
    if (this.opts.shortLives?.quiet) this.log.debug({ evt: "relay.connected" }, "connected, waiting for AUTH challenge");
    else this.log.info({ evt: "relay.connected" }, "connected, waiting for AUTH challenge");
    this.later(() => {
      if (!this.authed && !this.challenge && !this.authInFlight && this.ws) {
        this.log.warn({ evt: "relay.no_challenge" }, "relay sent no AUTH challenge; continuing unauthenticated");
        this.unchallenged = true;
        this.onAuthenticated();
      }
    }, this.opts.challengeWaitMs ?? 5000);
    const ws = this.ws!;
    this.stopLiveness = watchLiveness(ws, this.opts.pingIntervalMs ?? 30_000, this.opts.pongTimeoutMs ?? 10_000, () => {
      this.metrics.dead++;
      this.log.warn({ evt: "relay.dead" }, "no pong from relay; reconnecting");
      ws.terminate();
    });
  }

  private onClose(code: number, reason: string): void {
    const wasAuthed = this.authed;
    const worked = this.authenticatedAt !== undefined && Date.now() - this.authenticatedAt >= WORKING_SESSION_MS;
    const planned = this.planned;
    const lived = this.openedAt !== undefined ? Date.now() - this.openedAt : undefined;
    this.planned = false;
    this.teardown();
    this.ws = undefined;
    if (this.stopped) return;
    // Its successor took over: whatever it still carried is re-sent there.
    if (this.retiring) return this.stop();
    // The relay ended a working socket within moments (a very short lifetime): a growing
    // pause, and one line a minute (short-lives.ts) instead of one per reconnect.
    const ended = planned || (wasAuthed && (code === 1000 || code === 1001));
    const shortWait = ended && lived !== undefined ? this.opts.shortLives?.ended(lived) : undefined;
    if (shortWait !== undefined) {
      this.log.debug({ evt: "relay.disconnected", code, reason, was_authenticated: wasAuthed, planned, retry_ms: shortWait });
      this.setState("closed");
      this.later(() => {
        this.metrics.reconnects++;
        this.connect();
      }, shortWait);
      return;
    }
    // A clean close after a working session is the relay ending it on schedule (its
    // connection lifetime): reconnect at once, with a little jitter, and keep the backoff
    // for real failures.
    const scheduled = planned || (worked && (code === 1000 || code === 1001));
    const delay = planned ? 0 : scheduled ? 50 + Math.floor(Math.random() * 200) : this.backoff.next();
    if (scheduled && !planned) this.metrics.relayClosed++;
    const line = { evt: "relay.disconnected", code, reason, was_authenticated: wasAuthed, planned, retry_ms: delay };
    if (scheduled)
      this.log.info(
        line,
        planned ? "replacing the relay connection before its lifetime ends" : "the relay closed the connection; reconnecting",
      );
    else this.log.warn(line, "relay connection closed; reconnecting");
    this.setState("closed");
    this.later(() => {
      this.metrics.reconnects++;
      this.connect();
    }, delay);
  }

  /** Clears per-socket state; pending publishes learn they were disconnected. */
  private teardown(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.stopLiveness?.();
    this.stopLiveness = undefined;
    this.authed = false;
    this.authenticatedAt = undefined;
    this.openedAt = undefined;
    this.challenge = undefined;
    this.authInFlight = undefined;
    for (const s of this.subs.values()) Object.assign(s, { open: false, eosed: false, pending: 0, authRetried: false });
    this.okWaiters.failAll();
    for (const r of [...this.reads.values()]) r.done(DISCONNECTED);
  }

  private onMessage(text: string): void {
    const f = parseRelayFrame(text);
    switch (f.type) {
      case "EVENT":
        if (this.reads.has(f.sub)) return void this.reads.get(f.sub)!.events.push(f.event);
        if (!this.subs.has(f.sub)) return this.invalid("EVENT for a subscription we do not hold", text);
        this.emit("event", f.sub, f.event);
        return;
      case "OK":
        if (this.swallowOk.delete(f.id)) return;
        return this.okWaiters.resolve(f.id, f.ok, f.reason);
      case "EOSE":
        if (this.reads.has(f.sub)) return this.reads.get(f.sub)!.done();
        return this.onEose(f.sub);
      case "CLOSED":
        if (this.reads.has(f.sub)) return this.reads.get(f.sub)!.done(f.reason || "closed");
        return this.onSubClosed(f.sub, f.reason);
      case "AUTH":
        this.challenge = f.challenge;
        this.unchallenged = false;
        void this.authenticate();
        return;
      case "NOTICE":
        this.throttle.log("info", "relay.notice", { evt: "relay.notice", notice: f.message }, "relay notice");
        if (reasonPrefix(f.message) === "rate-limited") {
          this.rateLimit(f.message);
          // Buzz drops an over-quota EVENT with a NOTICE and no OK (docs/protocol.md, "Limits"):
          // we cannot tell which one, so every publish waiting for an OK is retried after the
          // pause. Re-sending a stored event only earns a `duplicate`, which counts as success.
          this.okWaiters.answerWhere((id) => this.eventsInFlight.has(id), false, f.message);
        }
        return;
      case "invalid":
        return this.invalid(f.reason, text);
    }
  }

  private invalid(reason: string, text: string): void {
    this.metrics.invalidFrames++;
    this.throttle.warn("relay.invalid_frame", { reason, frame: text.slice(0, 200) }, "ignored a frame from the relay");
  }

  /** Signs and sends AUTH for the current challenge; one at a time; never rejects. */
  private authenticate(): Promise<boolean> {
    if (this.authInFlight) {
      // A challenge that arrived while we answered the previous one is answered next.
      const answering = this.authChallenge;
      return this.authInFlight.then((ok) => (this.challenge !== answering ? this.authenticate() : ok));
    }
    const challenge = this.challenge;
    if (!challenge || !this.ws) return Promise.resolve(this.authed);
    this.authChallenge = challenge;
    const ev = signEvent(authTemplate(this.url, challenge), this.opts.secretKey);
    const p = new Promise<boolean>((resolve) =>
      this.okWaiters.add(
        ev.id,
        this.opts.authTimeoutMs ?? 5000,
        (ok, reason) => resolve(this.onAuthAnswer(ok, reason)),
        () => {
          this.log.warn({ evt: "relay.auth_timeout" }, "no answer to AUTH; reconnecting");
          this.ws?.terminate();
          resolve(false);
        },
      ),
    ).finally(() => {
      if (this.authInFlight === p) this.authInFlight = undefined;
    });
    this.authInFlight = p;
    if (this.sendFrame(["AUTH", ev])) this.budget.note();
    return p;
  }

  private onAuthAnswer(ok: boolean, reason: string): boolean {
    if (reason === DISCONNECTED) return false;
    if (ok || (this.authed && /already authenticated/i.test(reason))) {
      this.metrics.authOk++;
      if (!this.authed) this.onAuthenticated();
      else this.log.info({ evt: "relay.reauthenticated" }, "answered a re-challenge");
      return true;
    }
    this.metrics.authRefused++;
    this.lastAuthError = reason;
    // The message names the fix (for a membership refusal: the npub the relay admin must add).
    this.log.error({ evt: "relay.auth_refused", reason }, refusalAdvice(reason, pubkeyOf(this.opts.secretKey)));
    this.emit("auth-failed", reason);
    this.ws?.close(); // Buzz keeps a failed auth sticky per connection: only a new one can succeed
    return false;
  }

  private onAuthenticated(): void {
    this.authed = true;
    this.authenticatedAt = Date.now();
    this.lastAuthError = undefined;
    if (this.opts.shortLives?.quiet) this.log.debug({ evt: "relay.authenticated" }, "authenticated");
    else this.log.info({ evt: "relay.authenticated" }, "authenticated");
    this.later(() => this.backoff.reset(), this.opts.resetAfterMs ?? 60_000);
    this.setState("authenticated");
    for (const id of this.subs.keys()) void this.sendReq(id);
  }

  private async sendReq(id: string): Promise<void> {
    if (this.authInFlight) await this.authInFlight;
    const sub = this.subs.get(id);
    if (!sub || !this.authed) return;
    if (this.rateLimitedFor > 0) return this.deferReq(id);
    if (!(await this.budget.acquire("control"))) return;
    // Replaced while waiting: the replacement's own sendReq sends the newer filters.
    if (!this.authed || this.subs.get(id) !== sub) return;
    let filters: Filter[];
    try {
      filters = sub.filters();
    } catch (err) {
      this.log.error({ evt: "relay.filters_failed", sub: id, err: (err as Error).message }, "could not build subscription filters");
      return;
    }
    sub.eosed = false;
    if (filters.length === 0) {
      // A REQ needs at least one filter; nothing to listen to means no subscription.
      if (sub.open && this.sendFrame(["CLOSE", id])) this.metrics.closeFrames++; // the slot taken above
      sub.open = false;
      sub.pending = 0;
      sub.eosed = true;
      this.emit("eose", id);
      return this.checkSubscribed();
    }
    if (this.sendFrame(["REQ", id, ...filters])) {
      this.metrics.reqFrames++;
      sub.pending++;
      sub.open = true;
    }
  }

  private onEose(id: string): void {
    const sub = this.subs.get(id);
    if (!sub) return;
    sub.pending = Math.max(0, sub.pending - 1);
    if (sub.pending > 0) return; // the answer to a REQ that a newer one replaced
    sub.eosed = true;
    sub.authRetried = false;
    this.emit("eose", id);
    this.checkSubscribed();
  }

  private checkSubscribed(): void {
    if (this.authed && [...this.subs.values()].every((s) => s.eosed)) this.setState("subscribed");
  }

  private onSubClosed(id: string, reason: string): void {
    const sub = this.subs.get(id);
    if (!sub) return;
    sub.pending = Math.max(0, sub.pending - 1);
    sub.open = sub.pending > 0; // a newer REQ with this id may still be live
    const p = reasonPrefix(reason);
    if (p === "auth-required" && !sub.authRetried) {
      sub.authRetried = true;
      this.log.info({ evt: "relay.sub_reauth", sub: id, reason }, "subscription needs auth; re-authenticating once");
      void this.authenticate().then(() => this.sendReq(id));
      return;
    }
    if (p === "rate-limited") {
      this.rateLimit(reason);
      return this.deferReq(id);
    }
    this.throttle.log(
      "error",
      `relay.sub_closed:${id}`,
      { evt: "relay.sub_closed", sub: id, reason },
      `relay closed subscription ${id}: ${reason}`,
    );
    this.emit("sub-closed", id, reason);
  }

  private deferReq(id: string): void {
    this.gate.defer(this.tag + id, () => void this.sendReq(id));
  }

  /** Holds REQs and publishes back for the relay's `retry in Ns`. */
  private rateLimit(reason: string): void {
    this.metrics.rateLimited++;
    const pause = this.gate.hold(reason);
    this.log.warn({ evt: "relay.rate_limited", reason, pause_ms: pause }, "relay rate limit; holding back");
  }

  private sendFrame(frame: unknown[]): boolean {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  private later(fn: () => void, ms: number): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }

  private setState(s: ConnectionState): void {
    if (s === this._state) return;
    const prev = this._state;
    this._state = s;
    this.emit("state", s, prev);
  }
}
