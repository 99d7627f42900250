/**
 * A sliding-window limit: at most `frames` admitted in any `windowMs`. The development
 * relay's per-connection frame quota in Buzz's shape (docs/protocol.md §7: about 50 frames
 * per 5 s), and the daemon's per-session MCP endpoint's request rate.
 */
export interface RateLimit {
  /** Frames admitted per window. */
  frames: number;
  windowMs: number;
}

export class RateLimiter {
  private readonly stamps: number[] = [];

  constructor(private readonly limit: RateLimit) {}

  /** Counts one frame; undefined when admitted, else the seconds until one would be (≥ 1). */
  take(now = Date.now()): number | undefined {
    while (this.stamps.length > 0 && this.stamps[0]! <= now - this.limit.windowMs) this.stamps.shift();
    if (this.stamps.length >= this.limit.frames) {
      return Math.max(1, Math.ceil((this.stamps[0]! + this.limit.windowMs - now) / 1000));
    }
    this.stamps.push(now);
    return undefined;
  }
}
