/**
 * The host loopback ports a sandboxed agent may still reach (docs/security.md). In its own
 * network namespace the agent sees its own loopback, not the host's; the ports the
 * configuration itself points the agent or its MCP servers at — `http://127.0.0.1:4000` in
 * `agent.env` (a local model gateway), a local relay in a gate server's env — are carried
 * over, and only those:
 *
 *   inside the sandbox   `buzz-bridge sandbox-exec` (the sandbox's first process) listens
 *                        on 127.0.0.1:PORT and ::1:PORT and relays each connection to
 *   a unix socket        `<state_dir>/sandbox/loopback/PORT.sock`, bound read-only into the
 *                        sandbox, served by the daemon, which connects it to
 *   the host             127.0.0.1:PORT (or ::1:PORT).
 *
 * The daemon's own HTTP port is never carried over, whatever the configuration names.
 */
import { chmodSync, mkdirSync, rmSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";

/** `127.0.0.1:PORT`, `localhost:PORT` or `[::1]:PORT` in a string (a URL, a host:port). */
const LOOPBACK_PORT = /(?:127\.0\.0\.1|localhost|\[::1\]):(\d{1,5})(?!\d)/gi;

/** The loopback ports named in `strings`, ascending, without `except` (the daemon's own). */
export function loopbackPortsIn(strings: string[], except: number[] = []): number[] {
  const out = new Set<number>();
  for (const s of strings)
    for (const m of s.matchAll(LOOPBACK_PORT)) {
      const port = Number(m[1]);
      if (port > 0 && port < 65536 && !except.includes(port)) out.add(port);
    }
  return [...out].sort((a, b) => a - b);
}

/** One connection's two ends joined; either closing or failing closes both. */
function join2(a: Socket, b: Socket): void {
  a.pipe(b);
  b.pipe(a);
  const end = () => {
    a.destroy();
    b.destroy();
  };
  a.on("error", end).on("close", end);
  b.on("error", end).on("close", end);
}

/** The daemon's end: per port, a unix socket that connects to the host's loopback. */
export class LoopbackRelay {
  private readonly servers = new Map<number, Server>();

  constructor(readonly dir: string) {}

  /** The socket for `port`, listening once this resolves. */
  async socketFor(port: number): Promise<string> {
    const path = join(this.dir, `${port}.sock`);
    if (this.servers.has(port)) return path;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    rmSync(path, { force: true });
    const server = createServer((inbound) => {
      inbound.pause();
      const toHost = (host: string, fallback?: string) => {
        const out = createConnection({ host, port });
        out.once("connect", () => {
          join2(inbound, out);
          inbound.resume();
        });
        out.once("error", () => (fallback ? toHost(fallback) : inbound.destroy()));
      };
      toHost("127.0.0.1", "::1");
    });
    this.servers.set(port, server);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(path, () => resolve());
    });
    server.unref();
    chmodSync(path, 0o600);
    return path;
  }

  close(): void {
    for (const s of this.servers.values()) s.close();
    this.servers.clear();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The sandbox's end: listens on 127.0.0.1:PORT (and ::1:PORT where the namespace has it) and relays to `socket`. */
export async function forwardInside(port: number, socket: string): Promise<Server[]> {
  const listen = (host: string) =>
    new Promise<Server | undefined>((resolve, reject) => {
      const server = createServer((inbound) => join2(inbound, createConnection(socket)));
      server.once("error", (err: NodeJS.ErrnoException) =>
        host === "::1" && (err.code === "EADDRNOTAVAIL" || err.code === "EAFNOSUPPORT") ? resolve(undefined) : reject(err),
      );
      server.listen(port, host, () => resolve(server));
    });
  const v4 = await listen("127.0.0.1");
  const v6 = await listen("::1");
  return [v4, v6].filter((s): s is Server => s !== undefined);
}
