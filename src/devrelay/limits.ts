/**
 * Buzz's limits, which the dev relay enforces by default with Buzz's reply texts
 * (docs/protocol.md, "Limits"; docs/dev-relay.md, "Limits"), so tests meet what a real relay
 * does to a client: one frame quota per pubkey shared by every connection and every HTTP
 * bridge call of that key, an HTTP bridge quota per pubkey, frame and content sizes, the
 * created_at window, subscriptions per connection, stored events per filter, and (off by
 * default) a maximum connection lifetime. Each is settable from the command line and the
 * seed; `noLimits` turns the two quotas off for benchmarks and tests that measure something
 * else.
 */
import { z } from "zod";
import { parseDuration } from "../config/duration.js";
import type { RateLimit } from "../base/rate-limit.js";

export interface RelayLimits {
  /**
   * Frames admitted per pubkey per window, counted over every connection of the key
   * (`EVENT`, `REQ`, `COUNT`) and every HTTP bridge call it makes; null = no quota.
   */
  frameQuota: RateLimit | null;
  /** HTTP bridge calls (`/query`, `/events`, `/count`) per pubkey per window; null = no quota. */
  httpQuota: RateLimit | null;
  /** Larger frames get a NOTICE and the socket is closed (BUZZ_MAX_FRAME_BYTES). */
  frameBytes: number;
  /** Larger event content (bytes of UTF-8) is refused. */
  contentBytes: number;
  /** created_at must be within this many seconds of relay time. */
  createdAtSkewSec: number;
  maxSubscriptions: number;
  /** Stored events returned per filter before EOSE. */
  maxStoredPerFilter: number;
  /** Each socket is closed this long after it opened (NIP-FI session lifetime); null = never. */
  maxConnectionLifetimeMs: number | null;
}

/** Buzz's defaults: 10 frames/s checked over 5 s; 300 HTTP calls a minute (a person's quota). */
export const BUZZ_LIMITS: RelayLimits = Object.freeze({
  frameQuota: { frames: 50, windowMs: 5000 },
  httpQuota: { frames: 300, windowMs: 60_000 },
  frameBytes: 512 * 1024,
  contentBytes: 256 * 1024,
  createdAtSkewSec: 900,
  maxSubscriptions: 1024,
  maxStoredPerFilter: 2000,
  maxConnectionLifetimeMs: null,
});

/** What callers may set: any subset; `noLimits` switches both quotas off (it wins over a quota given). */
export interface LimitsInput {
  noLimits?: boolean;
  limits?: Partial<RelayLimits>;
}

export function resolveLimits(...layers: (LimitsInput | undefined)[]): RelayLimits {
  let out: RelayLimits = { ...BUZZ_LIMITS };
  let noLimits = false;
  for (const l of layers) {
    if (!l) continue;
    out = { ...out, ...Object.fromEntries(Object.entries(l.limits ?? {}).filter(([, v]) => v !== undefined)) };
    noLimits ||= l.noLimits === true;
  }
  if (noLimits) out = { ...out, frameQuota: null, httpQuota: null };
  return out;
}

const QUOTA = /^(\d+)\/(\d+(?:\.\d+)?(?:ms|s|m|h))$/;

/** `50/5s` → {frames: 50, windowMs: 5000}; `off` → null; undefined when the text is not a quota. */
export function parseQuota(text: string): RateLimit | null | undefined {
  if (text.trim() === "off") return null;
  const m = QUOTA.exec(text.trim());
  if (!m) return undefined;
  const windowMs = parseDuration(m[2]!);
  const frames = Number(m[1]);
  if (!windowMs || frames < 1) return undefined;
  return { frames, windowMs };
}

const quota = z.union([
  z.literal("off").transform(() => null),
  z.strictObject({ frames: z.number().int().positive(), window: z.string() }).transform((q, ctx) => {
    const windowMs = parseDuration(q.window);
    if (!windowMs) {
      ctx.addIssue({ code: "custom", message: `window must be a duration such as 5s or 1m, got '${q.window}'` });
      return z.NEVER;
    }
    return { frames: q.frames, windowMs };
  }),
]);
const positive = z.number().int().positive();

/** The seed file's `limits:` section (docs/dev-relay.md). */
export const seedLimitsSchema = z
  .strictObject({
    frame_quota: quota.optional(),
    http_quota: quota.optional(),
    max_frame_bytes: positive.optional(),
    max_content_bytes: positive.optional(),
    created_at_skew: z.string().optional(),
    max_subscriptions: positive.optional(),
    max_stored_per_filter: positive.optional(),
    max_connection_lifetime: z.string().optional(),
  })
  .transform((l, ctx): Partial<RelayLimits> => {
    let skew: number | undefined;
    if (l.created_at_skew !== undefined) {
      const ms = parseDuration(l.created_at_skew);
      if (!ms)
        ctx.addIssue({
          code: "custom",
          path: ["created_at_skew"],
          message: `must be a duration such as 900s or 15m, got '${l.created_at_skew}'`,
        });
      else skew = Math.round(ms / 1000);
    }
    let lifetime: number | null | undefined;
    if (l.max_connection_lifetime !== undefined) {
      lifetime = parseLifetime(l.max_connection_lifetime);
      if (lifetime === undefined)
        ctx.addIssue({
          code: "custom",
          path: ["max_connection_lifetime"],
          message: `must be a duration of at least 1s such as 30s or 15m, or off; got '${l.max_connection_lifetime}'`,
        });
    }
    return {
      frameQuota: l.frame_quota,
      httpQuota: l.http_quota,
      frameBytes: l.max_frame_bytes,
      contentBytes: l.max_content_bytes,
      createdAtSkewSec: skew,
      maxSubscriptions: l.max_subscriptions,
      maxStoredPerFilter: l.max_stored_per_filter,
      maxConnectionLifetimeMs: lifetime,
    };
  });

/** `30s` → 30000, `off` → null; undefined for anything else (shorter than 1 s included: the relay must let a client authenticate). */
export function parseLifetime(text: string): number | null | undefined {
  if (text.trim() === "off") return null;
  const ms = parseDuration(text);
  return ms !== null && ms >= 1000 ? ms : undefined;
}

/** One line for the start banner and logs: what this relay enforces. */
export function describeLimits(l: RelayLimits): string {
  const q = (r: RateLimit | null, unit: string) => (r ? `${r.frames} ${unit}/${r.windowMs / 1000}s` : "off");
  const life =
    l.maxConnectionLifetimeMs === null ? "connections live until closed" : `connections closed after ${l.maxConnectionLifetimeMs / 1000}s`;
  return `frame quota ${q(l.frameQuota, "frames")} per pubkey (WebSocket and HTTP), http quota ${q(l.httpQuota, "calls")}, frame ≤ ${l.frameBytes} B, content ≤ ${l.contentBytes} B, created_at ±${l.createdAtSkewSec}s, ≤ ${l.maxSubscriptions} subscriptions, ≤ ${l.maxStoredPerFilter} stored events per filter, ${life}`;
}
