/**
 * Logging: pino, one JSON object per line with a stable `evt` name (docs/architecture.md).
 * Secrets are removed by path with pino's `redact`; the paths cover every place a key
 * could travel (config objects, env maps handed to children, raw errors).
 */
import { pino, type Logger, type DestinationStream, type Level } from "pino";
import { headlineFor } from "./log-headlines.js";

export type { Logger };

/** Paths pino censors wherever they occur in a log object (wildcards cover nesting). */
const REDACT_PATHS = [
  "secret_key",
  "secretKey",
  "nsec",
  "token",
  "*.secret_key",
  "*.secretKey",
  "*.nsec",
  "*.token",
  "*.*.secret_key",
  "*.*.secretKey",
  "*.*.token",
  "env.BUZZ_PRIVATE_KEY",
  "env.NOSTR_PRIVATE_KEY",
  "*.env.BUZZ_PRIVATE_KEY",
  "*.env.NOSTR_PRIVATE_KEY",
  "state.url",
  "*.state.url",
  "headers.authorization",
  "*.headers.authorization",
];

/** Anything that looks like a bech32 nsec is masked inside strings too (messages, stderr tails). */
const NSEC_IN_TEXT = /nsec1[02-9ac-hj-np-z]{20,}/g;

/** The password of a PostgreSQL URL (`user:password@` or `?password=`). */
const DB_PASSWORD_IN_URL = /(postgres(?:ql)?:\/\/[^:/@\s]*:)[^@\s]*@/gi;
const DB_PASSWORD_PARAM = /(postgres(?:ql)?:\/\/\S*[?&]password=)[^&\s]*/gi;

/** A database URL as it may be shown: the password replaced by [redacted]. */
export function redactDatabaseUrl(text: string): string {
  return text.replace(DB_PASSWORD_IN_URL, "$1[redacted]@").replace(DB_PASSWORD_PARAM, "$1[redacted]");
}

export function scrub(text: string): string {
  return redactDatabaseUrl(text.replace(NSEC_IN_TEXT, "nsec1[redacted]"));
}

export interface LogOptions {
  level?: string;
  format?: "json" | "pretty";
  /** Where lines go; default stderr for commands whose stdout is a protocol (mcp-proxy, demo-agent), else stdout. */
  destination?: DestinationStream | NodeJS.WritableStream;
  name?: string;
}

export function createLogger(opts: LogOptions = {}): Logger {
  const options = {
    level: opts.level ?? "info",
    name: opts.name,
    base: { pid: process.pid },
    messageKey: "msg",
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    formatters: { level: (label: string) => ({ level: label }) },
    hooks: {
      // Masks nsec-shaped text in the message string; structured fields are covered by redact.
      // A call with fields only gets its event's headline, so no line has an empty `msg`.
      logMethod(this: Logger, args: unknown[], method: (...a: unknown[]) => void) {
        const [first] = args;
        if (
          args.length === 1 &&
          first &&
          typeof first === "object" &&
          typeof (first as { evt?: unknown }).evt === "string" &&
          !("msg" in first)
        ) {
          args = [first, headlineFor((first as { evt: string }).evt)];
        }
        method.apply(
          this,
          args.map((a) => (typeof a === "string" ? scrub(a) : a)),
        );
      },
    },
  };
  if (opts.format === "pretty") {
    return pino({ ...options, transport: { target: "pino-pretty", options: { colorize: process.stdout.isTTY, destination: 1 } } });
  }
  return pino(options, (opts.destination as DestinationStream | undefined) ?? pino.destination({ dest: 1, sync: true }));
}

/** The `name` of the proxy's logger: how a line on an agent's stderr says it is the proxy's. */
export const PROXY_LOGGER_NAME = "mcp-proxy";
const LEVELS: readonly Level[] = ["trace", "debug", "info", "warn", "error", "fatal"];

/** The highest level a relayed line takes in the daemon's log: error and fatal are the daemon's own. */
const RELAYED_MAX_LEVEL: Level = "warn";

/** The `evt` under which the daemon logs a line the session's proxy logged. */
export const PROXY_LINE_EVT = "proxy.log";

/**
 * A line that says it is our own mcp-proxy's, come back through an agent's stderr (the agent
 * starts the proxy and passes its stderr on), as the daemon's line about it: `evt` is always
 * `proxy.log`, the proxy's own event, fields, level and pid sit under `proxy`, and the
 * level is capped at warn. Anything on an agent's stderr — the proxy's lines, or the agent's
 * imitation of them — is the agent's text: it never becomes a daemon event of its choosing
 * (a `gate.accepted`, a `fatal`). Undefined for a line that is not shaped like the proxy's.
 */
export function proxyLogLine(line: string): { level: Level; fields: Record<string, unknown>; msg: string } | undefined {
  if (!line.startsWith("{")) return undefined;
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (o === null || typeof o !== "object" || Array.isArray(o)) return undefined;
  const level = o.level as Level;
  if (o.name !== PROXY_LOGGER_NAME || typeof o.evt !== "string" || !LEVELS.includes(level)) return undefined;
  const { time: _time, name: _name, msg, ...theirs } = o;
  const capped = LEVELS.indexOf(level) > LEVELS.indexOf(RELAYED_MAX_LEVEL) ? RELAYED_MAX_LEVEL : level;
  // Their words, on one line: a line break or terminal escape in `msg` must not draw a line of its own in pretty logs.
  const said = (typeof msg === "string" ? msg : String(o.evt)).replace(/[\p{Cc}]+/gu, " ").slice(0, 300);
  return { level: capped, fields: { evt: PROXY_LINE_EVT, proxy: theirs }, msg: `mcp-proxy: ${said}` };
}

/** A logger that writes nothing, for library code used outside the daemon. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
