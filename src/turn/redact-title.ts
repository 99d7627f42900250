/**
 * What a tool call's title may show channel members (the work status, NIP-AW's redaction
 * contract: docs/protocol.md §4): no path under the bridge's state directory, no secret, no
 * URL carrying credentials, no control characters, at most 160 characters. Titles come
 * from the agent, which builds them from its tool arguments, so anything it was given can
 * appear in them.
 */

/** NIP-AW's reference cap. */
export const MAX_TITLE_CHARS = 160;

export interface RedactOptions {
  /** The state directory (and anything else private on disk, e.g. its real path). */
  privateDirs: string[];
  /** Exact strings that must never appear (the identity's secret key, a database password…). */
  secrets?: string[];
}

const SECRET = "[redacted]";

/** Tokens that look like credentials, whatever their context. */
const SECRET_PATTERNS: RegExp[] = [
  /\bnsec1[02-9ac-hj-np-z]{20,}/gi, // a Nostr secret key
  /\b[0-9a-f]{64}\b/gi, // a 64-hex key (secret or not, it is never needed in a title)
  /\bsk-[A-Za-z0-9_-]{16,}/g, // OpenAI / Anthropic style API keys
  /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}/g, // GitHub tokens
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g, // Slack
  /\bAKIA[0-9A-Z]{16}\b/g, // AWS access key id
  /\bAIza[0-9A-Za-z_-]{30,}/g, // Google API key
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, // a JWT
  /-----BEGIN [A-Z ]*PRIVATE KEY-----/g,
];

/** `NAME=value`, `--token value`, `Authorization: Bearer x`, `?api_key=x`: the value goes. */
const SENSITIVE_NAME = `[A-Za-z0-9_.-]*(?:pass(?:word|wd)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credential|auth|session|cookie|nsec)[A-Za-z0-9_.-]*`;
// The value after an `Authorization:` that names its scheme is left to BEARER, which keeps the scheme word.
const ASSIGNMENT = new RegExp(
  String.raw`(\b${SENSITIVE_NAME}\s*[=:]\s*|--${SENSITIVE_NAME}[= ])(?!(?:Bearer|Basic|Nostr)\s)("[^"]*"|'[^']*'|[^\s&"']+)`,
  "gi",
);
const BEARER = /\b(Bearer|Basic|Nostr)\s+[A-Za-z0-9._~+/=-]{8,}/gi;
/** `scheme://user:pass@host` or `scheme://token@host`. */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi;

export function redactTitle(raw: string, o: RedactOptions): string {
  let t = [...raw].map((c) => (c.charCodeAt(0) < 32 || c.charCodeAt(0) === 127 ? " " : c)).join("");
  for (const s of o.secrets ?? []) if (s.length >= 8) t = t.split(s).join(SECRET);
  t = t.replace(URL_CREDENTIALS, `$1${SECRET}@`);
  t = t.replace(BEARER, `$1 ${SECRET}`);
  t = t.replace(ASSIGNMENT, `$1${SECRET}`);
  for (const p of SECRET_PATTERNS) t = t.replace(p, SECRET);
  for (const dir of o.privateDirs) t = hidePaths(t, dir);
  t = t.replace(/\s+/g, " ").trim();
  return t.length > MAX_TITLE_CHARS ? `${t.slice(0, MAX_TITLE_CHARS - 1)}…` : t;
}

/** A path under `dir` keeps only its last name: `…/index.ts` (the directory itself: `…`). */
function hidePaths(text: string, dir: string): string {
  const base = dir.replace(/\/+$/, "");
  if (base.length < 2) return text;
  const escaped = base.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return text.replace(new RegExp(`${escaped}(?:/[^\\s"'\`]*)?`, "g"), (m) => {
    const last = m.slice(base.length).split("/").filter(Boolean).at(-1);
    return last ? `…/${last}` : "…";
  });
}
