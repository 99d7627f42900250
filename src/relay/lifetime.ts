/**
 * Living with the relay's connection lifetime (docs/protocol.md §1, "Connection lifetime"):
 * Buzz closes every socket `max_connection_lifetime_seconds` after it opened, and a client
 * must open a new one and authenticate again. The client replaces its socket *before* that
 * deadline, a fifth of the lifetime ahead of it (at least 1 s, or half a shorter lifetime;
 * at most 30 s), so a successor has time to connect, authenticate and subscribe:
 *
 * - make-before-break, when the frame budget has room for a second socket's AUTH and REQs:
 *   a successor connects, authenticates and subscribes with `since` while the old socket
 *   still delivers; once every subscription of the successor has reached `EOSE` it takes
 *   over, and the old socket closes as soon as the publishes it carries are answered.
 *   Events both sockets deliver are de-duplicated by id in the client.
 * - otherwise break-before-make at a quiet moment: when no publish waits for its `OK` (or
 *   just before the deadline), the socket is closed and reopened at once.
 *
 * A successor that fails (refused, closed, or not subscribed in time) is dropped and the
 * quiet break is used instead.
 */
import type { Logger } from "../base/log.js";
import type { RelayConnection } from "./connection.js";

export interface LifetimeHost {
  /** The socket in use now. */
  current(): RelayConnection;
  /** A new socket carrying the client's subscriptions, started. */
  spawn(): RelayConnection;
  /** The successor takes over; the planner retires the old one. */
  adopt(next: RelayConnection): void;
  /** Frames a successor needs at once: its AUTH and one REQ per subscription. */
  framesToSubscribe(): number;
  /** Frames free in the shared budget now. */
  budgetFree(): number;
  /** A stated lifetime too short to replace sockets ahead of it (short-lives.ts): the relay ends them. */
  tooShortToPlan?(lifetimeMs: number): boolean;
  logger: Logger;
}

/** Never later than this before the deadline, however long the lifetime. */
const MAX_LEAD_MS = 30_000;
/** Room a successor socket needs on a busy machine: at least this before the deadline… */
const MIN_LEAD_MS = 1000;
/** …and otherwise this much of the lifetime. */
const LEAD_FRACTION = 0.2;

/** How long before the relay's deadline a socket is replaced. */
export function leadFor(lifetimeMs: number): number {
  return Math.max(Math.min(MIN_LEAD_MS, lifetimeMs / 2), Math.min(MAX_LEAD_MS, lifetimeMs * LEAD_FRACTION));
}

export class LifetimePlanner {
  private lifetimeMs: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private next: RelayConnection | undefined;
  private stopped = false;
  readonly metrics = { makeBeforeBreak: 0, quietBreak: 0, successorFailed: 0 };

  constructor(private readonly host: LifetimeHost) {}

  /** The relay's lifetime as its NIP-11 states it (undefined: sockets live until closed). */
  setLifetime(ms: number | undefined): void {
    if (ms === this.lifetimeMs) return;
    this.lifetimeMs = ms;
    this.schedule();
  }

  get lifetime(): number | undefined {
    return this.lifetimeMs;
  }

  /** The current socket (re)authenticated: its deadline is counted from when it opened. */
  authenticated(conn: RelayConnection): void {
    if (conn === this.host.current()) this.schedule();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.next?.stop();
    this.next = undefined;
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const life = this.lifetimeMs;
    const conn = this.host.current();
    if (this.stopped || life === undefined || conn.openedAt === undefined || !conn.authenticated) return;
    if (this.host.tooShortToPlan?.(life)) return;
    const due = conn.openedAt + life - leadFor(life);
    this.timer = setTimeout(() => void this.replace(conn, conn.openedAt! + life), Math.max(0, due - Date.now()));
    this.timer.unref();
  }

  private async replace(old: RelayConnection, deadline: number): Promise<void> {
    if (this.stopped || old !== this.host.current() || this.next || old.openedAt === undefined) return;
    if (this.host.budgetFree() >= this.host.framesToSubscribe()) {
      if (await this.makeBeforeBreak(old, deadline)) return;
    }
    this.breakWhenQuiet(old, deadline);
  }

  private async makeBeforeBreak(old: RelayConnection, deadline: number): Promise<boolean> {
    const next = this.host.spawn();
    this.next = next;
    const ok = await subscribedBefore(next, deadline - 50);
    this.next = undefined;
    if (this.stopped || !ok || old !== this.host.current()) {
      next.stop();
      if (!ok && !this.stopped) {
        this.metrics.successorFailed++;
        this.host.logger.info(
          { evt: "relay.successor_failed" },
          "a second socket could not be subscribed before the relay's deadline; reconnecting at a quiet moment instead",
        );
      }
      return this.stopped;
    }
    this.metrics.makeBeforeBreak++;
    this.host.adopt(next);
    old.retire(Math.max(0, deadline - Date.now()));
    this.schedule();
    this.host.logger.info(
      { evt: "relay.rotated", method: "make-before-break", lifetime_ms: this.lifetimeMs },
      "replaced the relay connection before its lifetime ended",
    );
    return true;
  }

  private breakWhenQuiet(conn: RelayConnection, deadline: number): void {
    const go = () => {
      clearTimeout(t);
      conn.off("idle", go);
      if (this.stopped || conn !== this.host.current() || conn.openedAt === undefined) return;
      this.metrics.quietBreak++;
      this.host.logger.info(
        { evt: "relay.rotated", method: "quiet-break", lifetime_ms: this.lifetimeMs },
        "reconnecting at a quiet moment before the relay's connection lifetime ends",
      );
      conn.recycle();
    };
    const t = setTimeout(go, Math.max(0, deadline - Date.now() - 50));
    if (!conn.busy) return go();
    conn.on("idle", go);
  }
}

/** True once `conn` has every subscription answered by EOSE, false if it is refused, closed or late. */
function subscribedBefore(conn: RelayConnection, deadline: number): Promise<boolean> {
  if (conn.state === "subscribed") return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(t);
      conn.off("state", onState);
      conn.off("auth-failed", onRefused);
      resolve(ok);
    };
    const onState = (s: string) => (s === "subscribed" ? done(true) : s === "closed" || s === "stopped" ? done(false) : undefined);
    const onRefused = () => done(false);
    const t = setTimeout(() => done(false), Math.max(0, deadline - Date.now()));
    conn.on("state", onState);
    conn.on("auth-failed", onRefused);
  });
}
