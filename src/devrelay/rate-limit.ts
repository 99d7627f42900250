/**
 * Buzz's frame quota in the dev relay (docs/protocol.md §7): one sliding window
 * (../base/rate-limit.ts) per pubkey shared by every connection and every HTTP bridge call of
 * that key, as Buzz's shared rate limiter keeps it. A connection that has not authenticated
 * yet has a window of its own.
 */
import { RateLimiter, type RateLimit } from "../base/rate-limit.js";

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
