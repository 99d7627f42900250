/**
 * The relay's NIP-11 document as the bridge reads it (docs/protocol.md §7, "What the relay
 * says about itself"): its limits, its own key (`self`) and the NIPs it speaks. A relay may
 * publish no document, a malformed one, or one that lies (a limit of 0, a `self` that is not
 * a key): every field is checked on its own, what is wrong is named in `problems`, and the
 * bridge goes on with Buzz's defaults for it. Pure: the fetch is relay/nip11.ts.
 */

/** Buzz's own limits (crates/buzz-relay config defaults), used for whatever the relay does not state. */
export const BUZZ_DEFAULT_LIMITS = Object.freeze({
  maxMessageLength: 512 * 1024,
  maxContentLength: 256 * 1024,
  maxSubscriptions: 1024,
  maxFilters: 10,
});

export interface RelayRateLimit {
  frames: number;
  windowMs: number;
}

export interface RelayInfoLimits {
  /** Largest WebSocket frame, bytes (`max_message_length`). */
  maxMessageLength: number;
  /** Largest event content, bytes (`max_content_length`). */
  maxContentLength: number;
  /** Subscriptions per connection (`max_subscriptions`). */
  maxSubscriptions: number;
  /** Filters per REQ (`max_filters`). */
  maxFilters: number;
  /** The relay closes each socket this long after it opened (`max_connection_lifetime_seconds`); undefined = never. */
  maxConnectionLifetimeMs: number | undefined;
  /** The relay's frame quota per key, where it states one (`rate_limits.frames` per `rate_limits.window_seconds`). */
  frameQuota: RelayRateLimit | undefined;
}

export interface RelayInfo {
  /** Whether the limits and key come from a document the relay served, or are all defaults. */
  source: "relay" | "defaults";
  name: string | undefined;
  software: string | undefined;
  /** The relay's own signing key (NIP-11 `self`), 64 lowercase hex; undefined when absent or not a key. */
  self: string | undefined;
  supportedNips: number[];
  limits: RelayInfoLimits;
  /** What was missing, malformed or untrue, each with the default used instead. */
  problems: string[];
}

const HEX_KEY = /^[0-9a-f]{64}$/i;

/** What a relay with no usable document is taken to be: Buzz's defaults, no `self`. */
export function defaultRelayInfo(problem: string): RelayInfo {
  return {
    source: "defaults",
    name: undefined,
    software: undefined,
    self: undefined,
    supportedNips: [],
    limits: { ...BUZZ_DEFAULT_LIMITS, maxConnectionLifetimeMs: undefined, frameQuota: undefined },
    problems: [problem],
  };
}

/** Reads a parsed NIP-11 document; never throws. */
export function parseRelayInfo(doc: unknown): RelayInfo {
  if (typeof doc !== "object" || doc === null || Array.isArray(doc))
    return defaultRelayInfo("the NIP-11 document is not a JSON object; using Buzz's default limits, no relay key");
  const d = doc as Record<string, unknown>;
  const problems: string[] = [];
  const text = (k: string) => (typeof d[k] === "string" ? (d[k] as string) : undefined);

  let self: string | undefined;
  if (d.self !== undefined) {
    if (typeof d.self === "string" && HEX_KEY.test(d.self)) self = d.self.toLowerCase();
    else problems.push(`self ${JSON.stringify(d.self).slice(0, 80)} is not a 64-hex public key; workflow wakes stay off`);
  }

  let supportedNips: number[] = [];
  if (d.supported_nips !== undefined) {
    if (Array.isArray(d.supported_nips) && d.supported_nips.every((n) => Number.isInteger(n) && (n as number) > 0))
      supportedNips = [...new Set(d.supported_nips as number[])].sort((a, b) => a - b);
    else problems.push("supported_nips is not a list of NIP numbers; ignored");
  }

  let lim: Record<string, unknown> = {};
  if (d.limitation !== undefined) {
    if (typeof d.limitation === "object" && d.limitation !== null && !Array.isArray(d.limitation))
      lim = d.limitation as Record<string, unknown>;
    else problems.push("limitation is not an object; using Buzz's default limits");
  }
  /** A positive integer limit, or the default with a problem when the relay states something else. */
  const positive = (key: string, fallback: number | undefined, where = "limitation"): number | undefined => {
    const v = lim[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v === "number" && Number.isInteger(v) && v > 0) return v;
    problems.push(`${where}.${key} is ${JSON.stringify(v).slice(0, 40)}, not a positive integer; using ${fallback ?? "none"}`);
    return fallback;
  };
  // Seconds, and a fraction of one is taken as stated (a test relay's short lifetime).
  let lifetimeSec: number | undefined;
  const life = lim.max_connection_lifetime_seconds;
  if (life !== undefined && life !== null) {
    if (typeof life === "number" && Number.isFinite(life) && life > 0) lifetimeSec = life;
    else
      problems.push(
        `limitation.max_connection_lifetime_seconds is ${JSON.stringify(life).slice(0, 40)}, not a positive number; taken as none`,
      );
  }

  let frameQuota: RelayRateLimit | undefined;
  const rates = lim.rate_limits;
  if (rates !== undefined) {
    const r = typeof rates === "object" && rates !== null && !Array.isArray(rates) ? (rates as Record<string, unknown>) : undefined;
    const frames = r?.frames;
    const windowSec = r?.window_seconds;
    if (r && frames === undefined && windowSec === undefined) {
      // Only an HTTP quota stated: nothing to say about frames.
    } else if (
      typeof frames === "number" &&
      Number.isInteger(frames) &&
      frames > 0 &&
      typeof windowSec === "number" &&
      Number.isFinite(windowSec) &&
      windowSec > 0
    ) {
      frameQuota = { frames, windowMs: Math.round(windowSec * 1000) };
    } else
      problems.push(
        `limitation.rate_limits ${JSON.stringify(rates).slice(0, 80)} does not state positive frames per window_seconds; using the configured relay.frame_quota`,
      );
  }

  return {
    source: "relay",
    name: text("name"),
    software: text("software"),
    self,
    supportedNips,
    limits: {
      maxMessageLength: positive("max_message_length", BUZZ_DEFAULT_LIMITS.maxMessageLength)!,
      maxContentLength: positive("max_content_length", BUZZ_DEFAULT_LIMITS.maxContentLength)!,
      maxSubscriptions: positive("max_subscriptions", BUZZ_DEFAULT_LIMITS.maxSubscriptions)!,
      maxFilters: positive("max_filters", BUZZ_DEFAULT_LIMITS.maxFilters)!,
      maxConnectionLifetimeMs: lifetimeSec === undefined ? undefined : Math.round(lifetimeSec * 1000),
      frameQuota,
    },
    problems,
  };
}

/**
 * Room for a message's content: the relay's content limit, and within its frame limit with
 * room for the envelope (`["EVENT",{id,pubkey,sig,tags,…}]`: ids, keys, a signature and up
 * to 50 mention tags take about 5 KiB).
 */
export function contentRoom(limits: Pick<RelayInfoLimits, "maxContentLength" | "maxMessageLength">): number {
  const ENVELOPE = 5 * 1024;
  return Math.max(1024, Math.min(limits.maxContentLength, limits.maxMessageLength - ENVELOPE));
}
