/**
 * The relay's `rate-limited: … retry in Ns` (docs/protocol.md §5 "Pacing", §6): while it holds,
 * REQs wait (the latest per subscription id) and are released together when it lifts.
 */
import { retryAfterMs } from "../base/backoff.js";

export class RateGate {
  private until = 0;
  private deferred = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  /**
   * @param release called with the deferred subscription ids when the pause ends.
   * @param defaultMs pause when the relay gives no hint. Default 5 s (buzz-acp).
   */
  constructor(
    private readonly release: (ids: string[]) => void,
    private readonly defaultMs = 5000,
  ) {}

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
      const ids = [...this.deferred];
      this.deferred.clear();
      this.release(ids);
    }, this.remaining + 5);
    return Math.round(ms);
  }

  /** Queues a subscription to be (re)sent when the pause ends. */
  defer(id: string): void {
    this.deferred.add(id);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.deferred.clear();
  }
}
