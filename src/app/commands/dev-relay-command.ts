/**
 * `buzz-bridge dev-relay`: the development relay as its own process. Stdout, in order:
 *   ws://127.0.0.1:PORT               (always the first line; tests and scripts read it)
 *   admin-token <hex>                 (Bearer token for POST /admin/<op>, see http.ts)
 *   channel <id> <name>               (one line per seeded channel)
 * then it serves until SIGINT/SIGTERM.
 */
import { parseCommandArgs, UsageError, withUsage } from "../../base/args.js";
import { SeedError } from "../../devrelay/errors.js";
import { startDevRelay } from "../../devrelay/index.js";
import { describeLimits, parseLifetime, parseQuota, type RelayLimits } from "../../devrelay/limits.js";
import { parseDuration } from "../../config/duration.js";

/** The limit flags, each checked with a message naming the flag and the accepted form. */
function limitsFromArgs(v: Record<string, string | undefined>): Partial<RelayLimits> {
  const out: Partial<RelayLimits> = {};
  const quota = (flag: string) => {
    const text = v[flag];
    if (text === undefined) return undefined;
    const q = parseQuota(text);
    if (q === undefined) throw new UsageError(`--${flag} must be N/WINDOW such as 50/5s, or off; got '${text}'\n\n${HELP}`);
    return q;
  };
  const count = (flag: string) => {
    const text = v[flag];
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${flag} must be a positive integer, got '${text}'\n\n${HELP}`);
    return n;
  };
  const fq = quota("frame-quota");
  if (fq !== undefined) out.frameQuota = fq;
  const hq = quota("http-quota");
  if (hq !== undefined) out.httpQuota = hq;
  out.frameBytes = count("max-frame-bytes");
  out.contentBytes = count("max-content-bytes");
  out.maxSubscriptions = count("max-subscriptions");
  out.maxStoredPerFilter = count("max-stored-per-filter");
  const skew = v["created-at-skew"];
  if (skew !== undefined) {
    const ms = parseDuration(skew);
    if (!ms) throw new UsageError(`--created-at-skew must be a duration such as 900s or 15m, got '${skew}'\n\n${HELP}`);
    out.createdAtSkewSec = Math.round(ms / 1000);
  }
  const life = v["max-connection-lifetime"];
  if (life !== undefined) {
    const ms = parseLifetime(life);
    if (ms === undefined)
      throw new UsageError(
        `--max-connection-lifetime must be a duration of at least 1s such as 30s or 15m, or off; got '${life}'\n\n${HELP}`,
      );
    out.maxConnectionLifetimeMs = ms;
  }
  return out;
}

const HELP = `usage: buzz-bridge dev-relay [--port N] [--host H] [--data DIR] [--seed FILE] [--no-limits]
                             [--max-connection-lifetime DURATION] [limit options]

The Buzz-compatible development relay: NIP-01/NIP-42 WebSocket and the NIP-98 HTTP
bridge (POST /query, /events, /count) on one port, channels as NIP-29 groups.

options:
  --port N       TCP port (default 0: any free port; the URL is printed first)
  --host H       listen address (default 127.0.0.1)
  --data DIR     keep events, channels and the relay key in DIR (SQLite); default memory
  --seed FILE    YAML with members (and their names), channels and limits (docs/dev-relay.md)
  --admin-token T  token for POST /admin/<op> (default random, printed; the admin API is
                 in docs/dev-relay.md)
  -h, --help     this text

Buzz's limits are enforced by default, with Buzz's reply texts (docs/dev-relay.md):
  --no-limits                 no frame quota and no HTTP quota (benchmarks, experiments)
  --frame-quota N/WINDOW|off  frames per pubkey over all its connections and HTTP calls
                              (default 50/5s; an EVENT over it is answered OK false rate-limited:)
  --http-quota N/WINDOW|off   HTTP bridge calls per pubkey (default 300/1m)
  --max-frame-bytes N         larger frames: NOTICE, then disconnect (default 524288)
  --max-content-bytes N       larger event content is refused (default 262144)
  --created-at-skew DURATION  created_at this far from relay time is refused (default 900s)
  --max-subscriptions N       per connection (default 1024)
  --max-stored-per-filter N   stored events sent per filter before EOSE (default 2000)
  --max-connection-lifetime DURATION|off
                              close each socket this long after it opened (default off);
                              announced in NIP-11 as max_connection_lifetime_seconds
The seed file's "limits:" section sets the same; the command line wins over it.

stdout: the ws:// URL, then "admin-token <token>", then "channel <id> <name>" per channel.
`;

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    const args = parseCommandArgs(
      argv,
      {
        port: { type: "string" },
        host: { type: "string" },
        data: { type: "string" },
        seed: { type: "string" },
        "admin-token": { type: "string" },
        "no-limits": { type: "boolean" },
        "frame-quota": { type: "string" },
        "http-quota": { type: "string" },
        "max-frame-bytes": { type: "string" },
        "max-content-bytes": { type: "string" },
        "created-at-skew": { type: "string" },
        "max-subscriptions": { type: "string" },
        "max-stored-per-filter": { type: "string" },
        "max-connection-lifetime": { type: "string" },
      },
      HELP,
    );
    if (!args) return 0;
    const v = args.values as Record<string, string | undefined>;
    const limits = limitsFromArgs(v);
    const port = v.port === undefined ? 0 : Number(v.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw new UsageError(`--port must be an integer 0..65535, got '${v.port}'\n\n${HELP}`);
    let relay;
    try {
      relay = await startDevRelay({
        port,
        host: v.host,
        dataDir: v.data,
        seed: v.seed,
        adminToken: v["admin-token"],
        limits,
        noLimits: args.values["no-limits"] === true,
      });
    } catch (err) {
      if (err instanceof SeedError) {
        process.stderr.write(`buzz-bridge dev-relay: ${err.message}\n`);
        return 1;
      }
      if ((err as NodeJS.ErrnoException).code === "EADDRINUSE") {
        process.stderr.write(`buzz-bridge dev-relay: port ${port} is already in use; pick another or use --port 0\n`);
        return 2;
      }
      throw err;
    }
    process.stdout.write(`${relay.url}\nadmin-token ${relay.adminToken}\n`);
    for (const c of relay.seeded) process.stdout.write(`channel ${c.id} ${c.name}\n`);
    process.stderr.write(`buzz-bridge dev-relay: limits: ${describeLimits(relay.limits)}\n`);
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
    await relay.close();
    return 0;
  });
}
