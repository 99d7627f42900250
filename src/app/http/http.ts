/**
 * The operations HTTP endpoint (`http.listen`, docs/operating.md), on node:http:
 *
 * - `GET /healthz`: 200 `{"status":"ok"}` while the process's event loop answers (liveness;
 *   systemd watchdogs and Docker's HEALTHCHECK use it, so it depends on nothing else).
 * - `GET /readyz`: 200 when every readiness check passes, else 503; the body lists each
 *   check as `{name, ok, detail}` so a person sees which one fails.
 * - `GET /metrics`: Prometheus text from {@link Metrics}.
 * - `GET /status`: the status page (./status-page.ts), when the daemon provides one;
 *   served with a Content-Security-Policy that allows no script and no remote asset.
 * - `GET /status.json`: the same snapshot as JSON, for scripts.
 * - anything else: 404 (405 for a known path with a method other than GET/HEAD).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "../../base/log.js";
import type { Metrics } from "./metrics.js";
import { hostname } from "node:os";
import { hostAllowed, LOOPBACK_NAMES, listenScope, type HostRule } from "../../base/host-check.js";
import { LogThrottle } from "../../base/log-throttle.js";

/** One readiness condition, e.g. `relay` (authenticated and subscribed), `agents`, `state`. */
export interface ReadyCheck {
  name: string;
  ok: boolean;
  /** What a person should know, especially when `ok` is false (e.g. "relay: auth-required: not a member"). */
  detail?: string;
}

export interface ReadyReport {
  checks: ReadyCheck[];
}

export interface HttpOptions {
  /** `host:port` or `[v6addr]:port`, as in the config's `http.listen`; port 0 picks a free one. */
  listen: string;
  /** `/metrics`' text: one daemon's {@link Metrics}, or a team's exposition of all its agents. */
  metrics: Pick<Metrics, "contentType" | "text">;
  /** Called on every `/readyz`; the daemon reports relay, agent circuits and state store. */
  readiness: () => ReadyReport | Promise<ReadyReport>;
  /** The status page's HTML, rendered on every request; `/status` is absent without it. */
  status?: () => string | Promise<string>;
  /** The status page's data for `/status.json`, gathered on every request; absent without it. */
  statusJson?: () => unknown;
  /** `http.allow_hosts`: names besides the listen address's that `Host` may carry (a reverse proxy's, the machine's DNS name). */
  allowHosts?: readonly string[];
  /** Optional; `http.listening` and request failures are logged here. */
  logger?: Logger;
}

export interface HttpHandle {
  /** Base URL actually bound, e.g. `http://127.0.0.1:9464` or `http://[::1]:9464`. */
  url: string;
  /** Stops listening and drops open (keep-alive) connections so shutdown is not held up. */
  close(): Promise<void>;
}

/** The endpoint could not be started: bad address, port in use, no permission. */
export class HttpListenError extends Error {
  override name = "HttpListenError";
}

/** Splits `host:port` / `[::1]:port` into parts; throws HttpListenError on anything else. */
export function parseListen(listen: string): { host: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s[\]]+)):(\d{1,5})$/.exec(listen);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) {
    throw new HttpListenError(`http.listen: expected host:port or [ipv6]:port, got ${JSON.stringify(listen)}`);
  }
  return { host: (m[1] ?? m[2])!, port };
}

function formatHostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Turns the OS error into the sentence a person needs to fix it. */
function listenErrorMessage(where: string, err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case "EADDRINUSE":
      return `cannot listen on ${where}: address already in use (another buzz-bridge?)`;
    case "EACCES":
      return `cannot listen on ${where}: permission denied (ports below 1024 need privileges; pick a higher port)`;
    case "EADDRNOTAVAIL":
      return `cannot listen on ${where}: address not available on this machine (check http.listen's host)`;
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `cannot listen on ${where}: host name does not resolve`;
    default:
      return `cannot listen on ${where}: ${err.message}`;
  }
}

/** No script, no remote load, inline styles only: the status page needs nothing else. */
const STATUS_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function send(res: ServerResponse, status: number, contentType: string, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": contentType, "cache-control": "no-store", ...headers });
  res.end(res.req.method === "HEAD" ? undefined : body);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  send(res, status, "application/json; charset=utf-8", `${JSON.stringify(body)}\n`);
}

async function readyz(opts: HttpOptions): Promise<{ status: number; body: { status: string; checks: ReadyCheck[] } }> {
  let checks: ReadyCheck[];
  try {
    checks = (await opts.readiness()).checks;
  } catch (err) {
    // A readiness function that throws is itself a reason not to take traffic.
    checks = [{ name: "readiness", ok: false, detail: `readiness check failed: ${(err as Error).message}` }];
  }
  const ready = checks.every((c) => c.ok);
  return { status: ready ? 200 : 503, body: { status: ready ? "ready" : "not ready", checks } };
}

const ROUTES = ["/healthz", "/readyz", "/metrics"];

/**
 * The `Host` names the endpoint answers to (DNS-rebinding defence, the MCP slot's check):
 * the loopback names when it listens on loopback, the listen address itself, any IP
 * literal and this machine's name when it listens on every address, and `http.allow_hosts`.
 */
export function opsHostRule(listenHost: string, allowHosts: readonly string[] = []): HostRule {
  const scope = listenScope(listenHost);
  const names = [listenHost, ...allowHosts, ...(scope === "one" ? [] : LOOPBACK_NAMES), ...(scope === "any" ? [hostname()] : [])];
  return { names, anyAddress: scope === "any" };
}

async function handle(
  opts: HttpOptions,
  req: IncomingMessage,
  res: ServerResponse,
  hosts: HostRule,
  refused: LogThrottle | undefined,
): Promise<void> {
  const path = new URL(req.url ?? "/", "http://localhost").pathname;
  // Liveness depends on nothing (probes send what they like); everything else shows who
  // asked what, the owner, the channels: only for this endpoint's own names.
  if (path !== "/healthz" && !hostAllowed(req.headers.host, hosts)) {
    refused?.log(
      "warn",
      "host",
      { evt: "http.refused", reason: "host", host: String(req.headers.host).slice(0, 200), path },
      "a request for another Host name (DNS rebinding?): 421",
    );
    sendJson(res, 421, { error: "misdirected request: this endpoint does not answer to that Host; add the name to http.allow_hosts" });
    return;
  }
  const routes = [...ROUTES, ...(opts.status ? ["/status"] : []), ...(opts.statusJson ? ["/status.json"] : [])];
  if (!routes.includes(path)) {
    sendJson(res, 404, { error: "not found", paths: routes });
    return;
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("allow", "GET, HEAD");
    sendJson(res, 405, { error: "method not allowed" });
    return;
  }
  if (path === "/healthz") {
    sendJson(res, 200, { status: "ok" });
  } else if (path === "/readyz") {
    const { status, body } = await readyz(opts);
    sendJson(res, status, body);
  } else if (path === "/status.json" && opts.statusJson) {
    sendJson(res, 200, await opts.statusJson());
  } else if (path === "/status" && opts.status) {
    send(res, 200, "text/html; charset=utf-8", await opts.status(), {
      "content-security-policy": STATUS_CSP,
      "x-content-type-options": "nosniff",
    });
  } else {
    send(res, 200, opts.metrics.contentType, await opts.metrics.text());
  }
}

/** Starts the endpoint; resolves once listening, rejects with HttpListenError otherwise. */
export async function startHttp(opts: HttpOptions): Promise<HttpHandle> {
  const { host, port } = parseListen(opts.listen);
  const hosts = opsHostRule(host, opts.allowHosts);
  const refused = opts.logger && new LogThrottle(opts.logger);
  const server = createServer((req, res) => {
    handle(opts, req, res, hosts, refused).catch((err: unknown) => {
      opts.logger?.warn({ evt: "http.error", path: req.url, err: (err as Error).message }, "http request failed");
      if (!res.headersSent) sendJson(res, 500, { error: "internal error" });
      else res.destroy();
    });
  });
  // Scrapers and probes are tiny; a slow client must not hold a socket for long.
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;

  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.close();
      reject(new HttpListenError(listenErrorMessage(formatHostPort(host, port), err), { cause: err }));
    };
    server.once("error", onError);
    server.listen({ host, port }, () => {
      server.off("error", onError);
      resolve();
    });
  });
  server.on("error", (err) => opts.logger?.error({ evt: "http.error", err: err.message }, "http server error"));

  const addr = server.address() as AddressInfo;
  const url = `http://${formatHostPort(addr.address, addr.port)}`;
  opts.logger?.info({ evt: "http.listening", url }, `health and metrics on ${url}`);

  let closed: Promise<void> | undefined;
  return {
    url,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
