/**
 * `buzz-bridge dev-relay`: the development relay as its own process. Stdout, in order:
 *   ws://127.0.0.1:PORT               (always the first line; tests and scripts read it)
 *   admin-token <hex>                 (Bearer token for POST /admin/<op>, see http.ts)
 *   channel <id> <name>               (one line per seeded channel)
 * then it serves until SIGINT/SIGTERM.
 */
import { parseCommandArgs, UsageError, withUsage } from "../ops/args.js";
import { SeedError } from "./errors.js";
import { startDevRelay } from "./index.js";

const HELP = `usage: buzz-bridge dev-relay [--port N] [--host H] [--data DIR] [--seed FILE]

The Buzz-compatible development relay: NIP-01/NIP-42 WebSocket and the NIP-98 HTTP
bridge (POST /query, /events, /count) on one port, channels as NIP-29 groups.

options:
  --port N       TCP port (default 0: any free port; the URL is printed first)
  --host H       listen address (default 127.0.0.1)
  --data DIR     keep events, channels and the relay key in DIR (SQLite); default memory
  --seed FILE    YAML with members and channels (docs/dev-relay.md)
  --admin-token T  token for POST /admin/<op> (default random, printed; the admin API is
                 in docs/dev-relay.md)
  -h, --help     this text

stdout: the ws:// URL, then "admin-token <token>", then "channel <id> <name>" per channel.
`;

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    const args = parseCommandArgs(argv, {
      port: { type: "string" },
      host: { type: "string" },
      data: { type: "string" },
      seed: { type: "string" },
      "admin-token": { type: "string" },
    }, HELP);
    if (!args) return 0;
    const v = args.values as Record<string, string | undefined>;
    const port = v.port === undefined ? 0 : Number(v.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be an integer 0..65535, got '${v.port}'\n\n${HELP}`);
    let relay;
    try {
      relay = await startDevRelay({ port, host: v.host, dataDir: v.data, seed: v.seed, adminToken: v["admin-token"] });
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
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
    await relay.close();
    return 0;
  });
}
