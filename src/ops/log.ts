/**
 * Logging: pino, one JSON object per line with a stable `evt` name (design §10).
 * Secrets are removed by path with pino's `redact`; the paths cover every place a key
 * could travel (config objects, env maps handed to children, raw errors).
 */
import { pino, type Logger, type DestinationStream } from "pino";

export type { Logger };

/** Paths pino censors wherever they occur in a log object (wildcards cover nesting). */
export const REDACT_PATHS = [
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
  "headers.authorization",
  "*.headers.authorization",
];

/** Anything that looks like a bech32 nsec is masked inside strings too (messages, stderr tails). */
const NSEC_IN_TEXT = /nsec1[02-9ac-hj-np-z]{20,}/g;

export function scrub(text: string): string {
  return text.replace(NSEC_IN_TEXT, "nsec1[redacted]");
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
      logMethod(this: Logger, args: unknown[], method: (...a: unknown[]) => void) {
        method.apply(this, args.map((a) => (typeof a === "string" ? scrub(a) : a)));
      },
    },
  };
  if (opts.format === "pretty") {
    return pino({ ...options, transport: { target: "pino-pretty", options: { colorize: process.stdout.isTTY, destination: 1 } } });
  }
  return pino(options, (opts.destination as DestinationStream | undefined) ?? pino.destination({ dest: 1, sync: true }));
}

/** A logger that writes nothing, for library code used outside the daemon. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
