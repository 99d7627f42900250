/**
 * The dev relay's NIP-11 document (docs/dev-relay.md, "NIP-11"), served on `GET /` and
 * `GET /info`: the limits it really enforces, its own key as `self` (which signs channel
 * state, membership notices and workflow output), and the NIPs it speaks. Buzz publishes
 * the same shape; the frame quota has no NIP-11 field of its own, so it is given under
 * `limitation.rate_limits`, which clients that do not know it ignore.
 */
import type { RelayLimits } from "./limits.js";

/** NIPs the dev relay implements: 1, 9 (deletion), 10, 11, 25, 29, 42, 45 (COUNT), 98 (HTTP auth). */
const SUPPORTED_NIPS = [1, 9, 10, 11, 25, 29, 42, 45, 98];

/** Subscription ids longer than this are refused (rules.ts LIMITS.maxSubIdLength). */
const MAX_SUBID_LENGTH = 64;

export function nip11Document(relaySelf: string, limits: RelayLimits): Record<string, unknown> {
  const limitation: Record<string, unknown> = {
    max_message_length: limits.frameBytes,
    max_content_length: limits.contentBytes,
    max_subscriptions: limits.maxSubscriptions,
    max_limit: limits.maxStoredPerFilter,
    max_subid_length: MAX_SUBID_LENGTH,
    auth_required: true,
    payment_required: false,
    restricted_writes: true,
    created_at_lower_limit: limits.createdAtSkewSec,
    created_at_upper_limit: limits.createdAtSkewSec,
  };
  if (limits.maxConnectionLifetimeMs !== null) limitation.max_connection_lifetime_seconds = limits.maxConnectionLifetimeMs / 1000;
  const rates: Record<string, unknown> = {};
  if (limits.frameQuota)
    Object.assign(rates, { frames: limits.frameQuota.frames, window_seconds: limits.frameQuota.windowMs / 1000, per: "pubkey" });
  if (limits.httpQuota)
    Object.assign(rates, { http_calls: limits.httpQuota.frames, http_window_seconds: limits.httpQuota.windowMs / 1000 });
  if (Object.keys(rates).length) limitation.rate_limits = rates;
  return {
    name: "buzz-bridge dev-relay",
    description: "Buzz-compatible development relay (not a production relay)",
    pubkey: relaySelf,
    self: relaySelf,
    supported_nips: SUPPORTED_NIPS,
    software: "buzz-bridge",
    limitation,
  };
}
