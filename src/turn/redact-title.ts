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
  /\bgl(?:pat|dt|rt|ptt)-[A-Za-z0-9_-]{16,}/g, // GitLab tokens
  /\bnpm_[A-Za-z0-9]{30,}/g, // npm access token
  /\bpypi-[A-Za-z0-9_-]{16,}/g, // PyPI API token
  /\b[rs]k_(?:live|test)_[A-Za-z0-9]{10,}/g, // Stripe keys
  /\bya29\.[A-Za-z0-9_-]{16,}/g, // a Google OAuth access token
  /\b(?:ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b/g, // other AWS key ids
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g, // the whole block, to the title's end when cut
];

/** A flag's value: quoted, or up to the next space. */
const VALUE = String.raw`(?:"[^"]*"|'[^']*'|[^\s"']+)`;
/** Within one command: up to a pipe, `;` or `&` (the next command's flags are not this one's). */
const SAME_COMMAND = String.raw`[^|;&\n]*?`;

/**
 * Command-line tools whose password flag is a short one that names nothing: the value after
 * it goes (`mysql -pPW`, `sshpass -p PW`, `redis-cli -a PW`, `docker login -p PW`, `curl -u
 * user:token`). `attached`: only `-pPW` is the password (mysql's `-p db` asks for one).
 */
const PASSWORD_FLAGS: { tools: string; flag: string; attached?: boolean }[] = [
  { tools: "mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb|mariadb-dump", flag: "-p", attached: true },
  { tools: "sshpass", flag: "-p" },
  { tools: "redis-cli|keydb-cli|valkey-cli", flag: "-a" },
  { tools: "(?:docker|podman|nerdctl|buildah|skopeo|helm\\s+registry)\\s+login", flag: "-p" },
  { tools: "mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport", flag: "-p" },
  { tools: "curl", flag: "(?:-u|-U|--user|--proxy-user)" },
  { tools: "wget", flag: "(?:--password|--http-password|--ftp-password|--proxy-password)" },
  { tools: "smbclient|rpcclient", flag: "(?:-U|--user)" },
  { tools: "htpasswd", flag: "-b\\s+\\S+\\s+\\S+" },
];
const FLAG_PATTERNS = PASSWORD_FLAGS.map(
  ({ tools, flag, attached }) =>
    new RegExp(
      String.raw`(\b(?:${tools})\b${SAME_COMMAND}\s${flag}${attached ? "" : String.raw`(?:[= ]\s*)?`})(?!\[redacted\])(${VALUE})`,
      "g",
    ),
);
/** `openssl … -passin pass:PW`, `-k PW` aside: openssl's inline password form. */
const OPENSSL_PASS = /\b(pass:)(\S+)/g;

/** `NAME=value`, `--token value`, `Authorization: Bearer x`, `?api_key=x`: the value goes. */
const SENSITIVE_NAME = `[A-Za-z0-9_.-]*(?:pass(?:word|wd)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credential|auth|session|cookie|nsec)[A-Za-z0-9_.-]*`;
// The value after an `Authorization:` that names its scheme is left to BEARER, which keeps the scheme word.
const ASSIGNMENT = new RegExp(
  String.raw`(\b${SENSITIVE_NAME}\s*[=:]\s*|--${SENSITIVE_NAME}[= ])(?!(?:Bearer|Basic|Nostr)\s)("[^"]*"|'[^']*'|[^\s&"']+)`,
  "gi",
);
/** `npm config set //registry/:_authToken TOKEN`, `aws configure set aws_secret_access_key X`: a key named like a secret, then its value. */
const CONFIG_SET = new RegExp(String.raw`(\bconfig(?:ure)?\s+set\s+(?:--\S+\s+)*\S*?(?:_auth\b|${SENSITIVE_NAME})\s+)(${VALUE})`, "gi");
/** npm's `.npmrc` words as people type them: `_authToken TOKEN`, `_auth BASE64`. */
const NPM_AUTH = new RegExp(String.raw`(\b_(?:authToken|auth|password)\s+)(${VALUE})`, "g");
const BEARER = /\b(Bearer|Basic|Nostr)\s+[A-Za-z0-9._~+/=-]{8,}/gi;
/** `scheme://user:pass@host` or `scheme://token@host`. */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi;

export function redactTitle(raw: string, o: RedactOptions): string {
  let t = [...raw].map((c) => (c.charCodeAt(0) < 32 || c.charCodeAt(0) === 127 ? " " : c)).join("");
  for (const s of o.secrets ?? []) if (s.length >= 8) t = t.split(s).join(SECRET);
  t = t.replace(URL_CREDENTIALS, `$1${SECRET}@`);
  t = t.replace(BEARER, `$1 ${SECRET}`);
  t = t.replace(ASSIGNMENT, `$1${SECRET}`);
  t = t.replace(CONFIG_SET, `$1${SECRET}`);
  t = t.replace(NPM_AUTH, `$1${SECRET}`);
  t = t.replace(OPENSSL_PASS, `$1${SECRET}`);
  // A command may give several: each pass takes the first after its tool, until none is left.
  for (const p of FLAG_PATTERNS) {
    for (let i = 0; i < 8; i++) {
      const next = t.replace(p, `$1${SECRET}`);
      if (next === t) break;
      t = next;
    }
  }
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
