/**
 * What kind of model-provider failure ended a turn (docs/agents.md "When the provider
 * fails"), read from what the agent reports: the ACP error (its code, message and data —
 * claude-agent-acp's `errorKind`, `authRequired`'s -32000) and the lines the agent wrote to
 * stderr during the turn (codex-acp logs the provider's status and error text there, e.g.
 * `unexpected status 401 Unauthorized: Incorrect API key provided`).
 *
 *   auth        the key was refused (401/403, authentication_error, invalid_api_key, login required)
 *   limit       a rate or usage limit (429, rate_limit_error, usage_limit_reached), with its reset when said
 *   overloaded  the provider is busy or broken (529, 5xx, overloaded_error)
 *   network     the provider could not be reached (connection refused, DNS, reset, TLS)
 *   other       anything else the agent refused the prompt with
 */

export type ProviderErrorClass = "auth" | "limit" | "overloaded" | "network" | "other";

export interface ProviderError {
  class: ProviderErrorClass;
  /** For `limit`: when the provider said the limit resets (Unix ms), if it said. */
  until?: number;
  /** The provider's own words, one line, at most 300 characters. */
  detail: string;
}

/** The ACP code of `authRequired` (ACP's JSON-RPC error for "sign in first"). */
const ACP_AUTH_REQUIRED = -32000;

const AUTH =
  /\b40[13]\b(?!\d)|unauthori[sz]ed|authentication_(?:error|failed)|invalid[ _-]?(?:x-)?api[ _-]?key|incorrect api key|api key (?:is )?(?:invalid|not valid)|permission_error|authentication required|please run \/login|invalid bearer token/i;
const LIMIT =
  /\b429\b|rate[ _-]?limit|usage[ _-]?limit|quota|too many requests|resets?[ _](?:at|in)\b|limit reached|billing_error|insufficient_quota/i;
const OVERLOADED = /\b529\b|\b50[0234]\b|overloaded|server_error|internal server error|service unavailable|bad gateway/i;
const NETWORK =
  /ECONNREFUSED|connection refused|ENOTFOUND|EAI_AGAIN|ECONNRESET|ETIMEDOUT|socket hang up|fetch failed|error sending request|connection error|unable to connect|certificate|TLS|SSL/i;

/**
 * The class of a turn's failure, from the ACP error and the agent's stderr of the turn.
 * Undefined for a failure that says nothing of a provider (the caller treats it as before).
 */
export function classifyProviderError(cause: unknown, stderr: string, now = Date.now()): ProviderError | undefined {
  const c = (cause && typeof cause === "object" ? cause : {}) as { code?: unknown; message?: unknown; data?: unknown };
  const data = c.data === undefined ? "" : safeJson(c.data);
  const message = typeof c.message === "string" ? c.message : String(cause ?? "");
  const kind = errorKindOf(c.data);
  const said = [message, data, stderr].join("\n");
  const detail = providerWords(said) ?? message;
  const line = (cls: ProviderErrorClass, until?: number): ProviderError => ({
    class: cls,
    ...(until !== undefined ? { until } : {}),
    detail: oneLine(detail),
  });
  if (c.code === ACP_AUTH_REQUIRED || kind === "authentication_failed") return line("auth");
  if (kind === "rate_limit" || kind === "billing_error") return line("limit", resetOf(said, now));
  if (kind === "server_error") return line("overloaded");
  // The most specific first: a 429's text may mention "quota", a 401's never "429".
  if (AUTH.test(said)) return line("auth");
  if (LIMIT.test(said)) return line("limit", resetOf(said, now));
  if (OVERLOADED.test(said)) return line("overloaded");
  if (NETWORK.test(said)) return line("network");
  return data || stderr.trim() || message ? line("other") : undefined;
}

/** claude-agent-acp names the SDK's error kind in the error's data (`{ errorKind }`). */
function errorKindOf(data: unknown): string | undefined {
  if (!data || typeof data !== "object") return undefined;
  const k = (data as { errorKind?: unknown }).errorKind;
  return typeof k === "string" ? k : undefined;
}

/**
 * When a limit resets, from the provider's words as agents pass them on: `resets_at` (Unix
 * seconds, OpenAI's usage limit), `resets_in_seconds`, `retry-after: N`, "try again in N s",
 * an ISO time (`anthropic-ratelimit-*-reset`), Claude's "resets 6:40pm" (UTC taken).
 */
export function resetOf(text: string, now = Date.now()): number | undefined {
  const at = /resets?_?at["'\s:=]+(\d{10,13})/i.exec(text);
  if (at) return toMs(Number(at[1]));
  const unified = /ratelimit-unified-reset["'\s:=]+(\d{10,13})/i.exec(text);
  if (unified) return toMs(Number(unified[1]));
  const inSec = /(?:resets?_in_seconds|retry[-_ ]after(?:_seconds)?)["'\s:=]+(\d+(?:\.\d+)?)/i.exec(text);
  if (inSec) return now + Math.round(Number(inSec[1]) * 1000);
  const tryIn = /try again in (\d+(?:\.\d+)?)\s*(ms|s|sec|seconds?|m|min|minutes?|h|hours?)\b/i.exec(text);
  if (tryIn) return now + Math.round(Number(tryIn[1]) * unitMs(tryIn[2]!));
  const iso = /resets?[^0-9]{0,40}(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z)/i.exec(text);
  if (iso) return Date.parse(iso[1]!);
  // "resets 6:40pm" (Claude), "Try again at 5:25 PM" (Codex): the agent's local time, to the
  // minute, so the end of that minute (the reset lies within it).
  const clock = /(?:resets?|try again)\s+(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*([ap])?\.?m?\b/i.exec(text);
  if (clock && (clock[2] || clock[3])) {
    let h = Number(clock[1]);
    if (clock[3]) h = (h % 12) + (clock[3].toLowerCase() === "p" ? 12 : 0);
    const d = new Date(now);
    d.setHours(h, Number(clock[2] ?? 0) + 1, 0, 0);
    const t = d.getTime();
    return t > now ? t : t + 86_400_000;
  }
  return undefined;
}

const toMs = (n: number) => (n < 1e12 ? n * 1000 : n);

function unitMs(u: string): number {
  if (u === "ms") return 1;
  if (/^h/i.test(u)) return 3_600_000;
  if (/^m(?!s)/i.test(u)) return 60_000;
  return 1000;
}

/** Terminal colour codes (codex-acp's log lines carry them). */
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

/** The line that carries the provider's own words, if one does. */
function providerWords(text: string): string | undefined {
  const lines = text.split("\n").filter((l) => l.trim());
  const pick = (re: RegExp) => lines.find((l) => re.test(l));
  const line = pick(AUTH) ?? pick(LIMIT) ?? pick(OVERLOADED) ?? pick(NETWORK);
  if (!line) return undefined;
  // codex-acp's tracing prefix (time, level, target) says nothing to a reader.
  return line.replace(ANSI, "").replace(/^\S+Z\s+\w+\s+[\w:]+:\s*/, "");
}

function oneLine(s: string): string {
  const t = s.replace(/\s+/g, " ").trim();
  return t.length > 300 ? `${t.slice(0, 299)}…` : t;
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}
