/**
 * The relay's `rate-limited: … retry in Ns` (docs/protocol.md §5 "Pacing", §7), from an `OK
 * false`, a `CLOSED`, a `NOTICE` or an HTTP 429: while it holds, REQs wait (the latest per
 * subscription) and are released together when it lifts. Buzz keeps one quota per key over
 * every connection and HTTP call, so one gate is shared by all of the identity's sockets and
 * its HTTP bridge: a refusal on one holds them all back.
 */
import { retryAfterMs } from "../base/backoff.js";

export class RatePause {
  private until = 0;
  private deferred = new Map<string, () => void>();
  private timer: NodeJS.Timeout | undefined;

  /** @param defaultMs pause when the relay gives no hint. Default 5 s (buzz-acp). */
  constructor(private readonly defaultMs = 5000) {}

  /** Milliseconds left; 0 when not limited. */
  get remaining(): number {
    return Math.max(0, this.until - Date.now());
  }

  /** Starts (or extends) a pause: the hint, at least 1 s, +0–20 % so bridges do not return in step. Returns its length. */
  hold(reason: string): number {
    const ms = Math.max(1000, retryAfterMs(reason) ?? this.defaultMs) * (1 + Math.random() * 0.2);
    this.until = Math.max(this.until, Date.now() + ms);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      const due = [...this.deferred.values()];
      this.deferred.clear();
      for (const fn of due) fn();
    }, this.remaining + 5);
    return Math.round(ms);
  }

  /** Runs `release` when the pause ends; a later defer under the same key replaces it (one REQ per subscription). */
  defer(key: string, release: () => void): void {
    this.deferred.set(key, release);
  }

  /** Forgets what one connection deferred (it was stopped), or everything. */
  drop(prefix?: string): void {
    if (prefix === undefined) this.deferred.clear();
    else for (const k of [...this.deferred.keys()]) if (k.startsWith(prefix)) this.deferred.delete(k);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.deferred.clear();
  }
}
