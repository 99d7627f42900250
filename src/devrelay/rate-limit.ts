/**
 * Buzz's frame quota in the dev relay (docs/protocol.md §7): a sliding window of frames, and
 * one such window per pubkey shared by every connection and every HTTP bridge call of that
 * key, as Buzz's shared rate limiter keeps it. A connection that has not authenticated yet
 * has a window of its own.
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

/** What one key spent: frames and HTTP calls admitted, and refused, since the relay started. */
export interface KeyUsage {
  wsFrames: number;
  httpCalls: number;
  refused: number;
}

/** One window per pubkey; `null` limit = no quota (usage is still counted). */
export class KeyBuckets {
  private readonly buckets = new Map<string, RateLimiter>();
  readonly usage = new Map<string, KeyUsage>();

  constructor(private readonly limit: RateLimit | null) {}

  /** Counts one frame (`ws`) or HTTP call (`http`) of `pubkey`; undefined when admitted, else the seconds to wait. */
  take(pubkey: string, via: "ws" | "http"): number | undefined {
    let u = this.usage.get(pubkey);
    if (!u) this.usage.set(pubkey, (u = { wsFrames: 0, httpCalls: 0, refused: 0 }));
    let retry: number | undefined;
    if (this.limit) {
      let b = this.buckets.get(pubkey);
      if (!b) this.buckets.set(pubkey, (b = new RateLimiter(this.limit)));
      retry = b.take();
    }
    if (retry !== undefined) u.refused++;
    else if (via === "ws") u.wsFrames++;
    else u.httpCalls++;
    return retry;
  }
}
