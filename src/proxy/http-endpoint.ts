/**
 * The daemon's loopback HTTP endpoint for one agent process: where an agent that speaks MCP
 * over Streamable HTTP (`mcpCapabilities.http`) finds its session's aggregated MCP server,
 * served by the MCP SDK's server transport in the daemon itself instead of an `mcp-proxy`
 * process per session (docs/architecture.md §4).
 *
 * One endpoint is one TCP port on 127.0.0.1, reserved before its agent process starts (so
 * a sandbox can let exactly that port through, docs/security.md) and bound to that
 * process's session when the session opens. A request is served only when it carries the
 * session's bearer token, which only that session's `session/new` carries; everything
 * else is refused before its body is read, and logged (rate-limited):
 *
 *   404 path        anything but /mcp
 *   403 host        a Host header that is not this loopback address (DNS rebinding)
 *   401 token       no token, or another session's (a replay), or no session bound
 *   429 rate        more than ENDPOINT_LIMITS.rate requests in its window
 *   503 busy        more than ENDPOINT_LIMITS.maxInFlight requests at once (a POST that
 *                   carries only notifications, a cancellation among them, has
 *                   NOTICE_HEADROOM places of its own, so an agent at its limit can
 *                   still cancel)
 *   413 too large   a body above ENDPOINT_LIMITS.maxBodyBytes
 *
 * Each endpoint has its own listener, limits and aggregator, so a flood on one is answered
 * there and the other sessions' endpoints never see it.
 *
 * A request the agent cancels (`notifications/cancelled`) gets no answer, as MCP has it, and
 * its stream is ended here: the SDK's client keeps it open after cancelling, and a stream
 * left open would hold its place among the requests at once for good.
 */
import { hostAllowed } from "../base/host-check.js";
import { BodyTooLargeError, readBody } from "../base/http-body.js";
import { randomBytes, randomUUID, createHash, timingSafeEqual } from "node:crypto";
import { chmodSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../base/log.js";
import { LogThrottle } from "../base/log-throttle.js";
import { RateLimiter } from "../base/rate-limit.js";
import type { Aggregator } from "./aggregator.js";
import type { AgentPassThrough, MessageSink } from "./pass-through.js";

/**
 * The SDK's server transport (with Hono's request adapter) and its types' schemas load with
 * the first MCP session's initialize, not with the daemon: an idle daemon does not hold them
 * (bench figure 7). `sdkTypes` is set once loaded: every session was made after it was.
 */
let transportModule: Promise<typeof import("@modelcontextprotocol/sdk/server/streamableHttp.js")> | undefined;
const loadTransport = () => (transportModule ??= import("@modelcontextprotocol/sdk/server/streamableHttp.js"));
type SdkTypes = typeof import("@modelcontextprotocol/sdk/types.js");
let typesModule: Promise<SdkTypes> | undefined;
let sdkTypes: SdkTypes | undefined;
const loadTypes = () => (typesModule ??= import("@modelcontextprotocol/sdk/types.js").then((m) => (sdkTypes = m)));

export interface EndpointLimits {
  /** Largest POST body read (bytes); the stdio proxy's line limit is larger, but this memory is the daemon's. */
  maxBodyBytes: number;
  /** Requests being served at once. */
  maxInFlight: number;
  /** Requests admitted per window. */
  rate: { frames: number; windowMs: number };
  /** MCP sessions (initialize handshakes) kept per endpoint; a new one beyond closes the oldest. */
  maxMcpSessions: number;
  /** TCP connections at once. */
  maxConnections: number;
}

export const ENDPOINT_LIMITS: EndpointLimits = {
  maxBodyBytes: 16 * 1024 * 1024,
  maxInFlight: 64,
  rate: { frames: 1000, windowMs: 1000 },
  maxMcpSessions: 4,
  maxConnections: 96,
};

/** The path of the MCP endpoint on its port. */
const MCP_PATH = "/mcp";

/** POSTs beyond maxInFlight whose bodies may be read at once: notifications (a cancellation) while the requests are at their limit. */
const NOTICE_HEADROOM = 8;

const answerHeaders = (sessionId: string) => ({
  jsonHeaders: ["Content-Type", "application/json", "mcp-session-id", sessionId],
  sseHeaders: ["Content-Type", "text/event-stream", "Cache-Control", "no-cache, no-transform", "mcp-session-id", sessionId],
});

type JsonRpcId = string | number;
const isId = (id: unknown): id is JsonRpcId => typeof id === "string" || typeof id === "number";
const messagesOf = (body: unknown): Array<Record<string, unknown>> =>
  (Array.isArray(body) ? body : [body]).filter((m): m is Record<string, unknown> => m !== null && typeof m === "object");
/** The ids of the requests a POST body carries (a message with a method and an id). */
const requestIds = (body: unknown): JsonRpcId[] =>
  messagesOf(body)
    .filter((m) => typeof m.method === "string" && isId(m.id))
    .map((m) => m.id as JsonRpcId);

/** One MCP session (an initialize) on the endpoint: the SDK's transport, and the calls the fast path answers itself. */
interface McpSession {
  transport: StreamableHTTPServerTransport;
  pass?: AgentPassThrough;
  /** Fast-path calls waiting for their answer: the agent's request id → the HTTP response it arrived on. */
  pending: Map<JsonRpcId, ServerResponse>;
  /** Every request's open response, either path: what a cancellation ends. */
  streams: Map<JsonRpcId, ServerResponse>;
  /** The headers of the fast path's answers (one JSON body, or an SSE stream), made once its id is known. */
  jsonHeaders: string[];
  sseHeaders: string[];
}

interface Bound {
  key: string;
  digest: Buffer;
  aggregator: Aggregator;
  transports: Map<string, McpSession>;
  /**
   * The Authorization header each connection has shown the token with, under this binding:
   * an agent's client sends the same header with every request on its connection, so a
   * request that repeats it is compared with what that connection itself sent (no secret's
   * timing to expose) instead of hashed again. A new binding starts with none.
   */
  proven: WeakMap<Socket, string>;
}

const digest = (token: string) => createHash("sha256").update(token).digest();

class EndpointError extends Error {
  override name = "EndpointError";
}

/** The names the slot's URL uses: an agent is given `127.0.0.1` or `localhost`, with the port. */
const SLOT_HOST_NAMES = ["127.0.0.1", "localhost"];

export class HttpEndpoint {
  private bound?: Bound;
  private inFlight = 0;
  private requests = 0;
  private readonly rate: RateLimiter;
  private readonly throttle: LogThrottle;
  private closed = false;
  /** The last Host header found to name this endpoint: an agent sends the same one with every request. */
  private knownHost?: string;

  private constructor(
    private readonly servers: HttpServer[],
    readonly port: number,
    readonly socket: string | undefined,
    private readonly log: Logger,
    private readonly limits: EndpointLimits,
  ) {
    this.rate = new RateLimiter(limits.rate);
    this.throttle = new LogThrottle(log, { perWindow: 5, windowMs: 60_000 });
  }

  /**
   * Listens on 127.0.0.1 on a port of its own (picked by the kernel); with `socket`, on that
   * unix socket too (mode 0600): a sandbox with a network of its own has its loopback port
   * of the same number lead there, so the one URL works inside it and on the host.
   */
  static async open(opts: { logger: Logger; limits?: Partial<EndpointLimits>; socket?: string }): Promise<HttpEndpoint> {
    const limits = { ...ENDPOINT_LIMITS, ...opts.limits };
    let endpoint: HttpEndpoint | undefined;
    const make = () => {
      const server = createServer((req, res) => {
        if (!endpoint) return void res.writeHead(503).end();
        endpoint.handle(req, res).catch((err: unknown) => endpoint!.failed(res, err));
      });
      server.maxConnections = limits.maxConnections;
      server.on("connection", (s) => s.setNoDelay?.(true));
      // A request's headers and body arrive at once on loopback; a tool call's answer may take hours (the SSE response).
      server.headersTimeout = 10_000;
      server.requestTimeout = 60_000;
      return server;
    };
    const listen = (server: HttpServer, where: string, ...at: [number, string] | [string]) =>
      new Promise<void>((resolve, reject) => {
        server.once("error", (err) => reject(new EndpointError(`cannot listen for the MCP endpoint on ${where}: ${err.message}`)));
        server.listen(...(at as [number, string]), () => resolve());
      });
    const tcp = make();
    await listen(tcp, "127.0.0.1", 0, "127.0.0.1");
    const servers = [tcp];
    if (opts.socket) {
      const unix = make();
      rmSync(opts.socket, { force: true });
      try {
        await listen(unix, opts.socket, opts.socket);
        chmodSync(opts.socket, 0o600);
      } catch (err) {
        tcp.close();
        throw err;
      }
      servers.push(unix);
    }
    endpoint = new HttpEndpoint(servers, (tcp.address() as AddressInfo).port, opts.socket, opts.logger, limits);
    return endpoint;
  }

  /** What the agent is given in `session/new`: `{ type: "http", url, headers }`. */
  get url(): string {
    return `http://127.0.0.1:${this.port}${MCP_PATH}`;
  }

  /**
   * Binds the session: from now on requests with its token reach `aggregator`. Returns the
   * headers the agent must send (its bearer token); a previous binding ends first.
   */
  bind(session: { key: string; aggregator: Aggregator }): Record<string, string> {
    this.unbind();
    const token = randomBytes(32).toString("base64url");
    this.bound = { key: session.key, digest: digest(token), aggregator: session.aggregator, transports: new Map(), proven: new WeakMap() };
    return { Authorization: `Bearer ${token}` };
  }

  /** The session ended: its token is revoked and its MCP connections closed (the aggregator is the caller's). */
  unbind(): void {
    const b = this.bound;
    this.bound = undefined;
    if (!b) return;
    for (const t of b.transports.values()) void t.transport.close().catch(() => {});
    b.transports.clear();
  }

  /** The agent process is gone: the port is released. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    this.unbind();
    return Promise.all(
      this.servers.map((server) => {
        server.closeAllConnections();
        return new Promise<void>((resolve) => server.close(() => resolve()));
      }),
    ).then(() => {
      if (this.socket) rmSync(this.socket, { force: true });
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "").split("?")[0];
    if (path !== MCP_PATH) return this.refuse(res, 404, "path", `no MCP endpoint at ${path}; it is ${MCP_PATH}`);
    const host = req.headers.host;
    if (host === undefined || host !== this.knownHost) {
      if (!hostAllowed(host, { names: SLOT_HOST_NAMES, port: this.port }))
        return this.refuse(res, 403, "host", `Host ${String(host)} is not this endpoint's loopback address`);
      this.knownHost = host;
    }
    const b = this.bound;
    if (!b || !this.authorized(req, b)) {
      res.setHeader("WWW-Authenticate", 'Bearer realm="buzz-bridge"');
      return this.refuse(res, 401, "token", "a missing, revoked or foreign bearer token: this endpoint serves one agent session only", b);
    }
    const wait = this.rate.take();
    if (wait !== undefined) {
      res.setHeader("Retry-After", String(wait));
      return this.refuse(res, 429, "rate", `more than ${this.limits.rate.frames} requests in ${this.limits.rate.windowMs} ms`, b);
    }
    let body: unknown;
    const busy = () => {
      res.setHeader("Retry-After", "1");
      this.refuse(res, 503, "busy", `more than ${this.limits.maxInFlight} requests at once`, b);
    };
    if (req.method === "POST") {
      if (this.inFlight >= this.limits.maxInFlight + NOTICE_HEADROOM) return busy();
      this.inFlight++;
      let request = false;
      res.once("close", () => {
        this.inFlight--;
        if (request) this.requests--;
      });
      let text: string;
      try {
        // Drained, so the agent reads the 413 before the connection closes.
        text = (await readBody(req, this.limits.maxBodyBytes, { rest: "drain" })).toString("utf8");
      } catch (err) {
        if (!(err instanceof BodyTooLargeError)) throw err;
        return this.refuse(res, 413, "too large", `request body above ${this.limits.maxBodyBytes} bytes`, b, { close: true });
      }
      try {
        body = JSON.parse(text);
      } catch {
        return this.refuse(res, 400, "unreadable", "Parse error: the body is not JSON", b, { code: -32700 });
      }
      if (requestIds(body).length > 0) {
        if (this.requests >= this.limits.maxInFlight) return busy();
        this.requests++;
        request = true;
      }
    }
    const sid = req.headers["mcp-session-id"];
    if (typeof sid !== "string") {
      if (req.method !== "POST" || !(await loadTypes()).isInitializeRequest(body))
        return this.refuse(res, 400, "mcp session", "Bad Request: no Mcp-Session-Id; send initialize first", b);
      return (await this.connect(b)).handleRequest(req, res, body);
    }
    const session = b.transports.get(sid);
    // The agent starts over with a fresh initialize (the spec's answer to a 404).
    if (!session) return this.refuse(res, 404, "mcp session", "Session not found", b, { code: -32001 });
    if (req.method !== "POST") return session.transport.handleRequest(req, res, body);
    this.track(session, body, res);
    if (this.fastCall(req, res, body, session, b)) return;
    await session.transport.handleRequest(req, res, body);
    this.endCancelled(session, body);
  }

  /**
   * The hot path, as the stdio proxy's: a tools/call the raw pass-through can take (a
   * downstream tool whose server is up) is handed to it here, and its answer written on this
   * request's own response, without the SDK transport's per-request conversion to web
   * streams and schema checks: as one JSON body when nothing comes before it (Streamable
   * HTTP lets the server answer a request either way, and the client that sent both types
   * in Accept must take either), as an SSE stream when progress comes first. Anything else, and any request
   * the SDK would refuse (its Accept or protocol version), takes the SDK's path. Cancelling
   * (a notification) arrives through the SDK and reaches the same pass-through.
   */
  private fastCall(req: IncomingMessage, res: ServerResponse, body: unknown, session: McpSession, b: Bound): boolean {
    const m = body as { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: { name?: unknown } } | null;
    if (!session.pass || m === null || typeof m !== "object" || Array.isArray(m) || m.jsonrpc !== "2.0" || m.method !== "tools/call")
      return false;
    const id = m.id;
    if ((typeof id !== "string" && typeof id !== "number") || session.pending.has(id)) return false;
    if (typeof m.params?.name !== "string" || !b.aggregator.rawRoute(m.params.name)) return false;
    const accept = req.headers.accept ?? "";
    if (!accept.includes("application/json") || !accept.includes("text/event-stream")) return false;
    const version = req.headers["mcp-protocol-version"];
    if (version !== undefined && !sdkTypes?.SUPPORTED_PROTOCOL_VERSIONS.includes(String(version))) return false;
    session.pending.set(id, res);
    res.once("close", () => {
      if (session.pending.get(id) === res) session.pending.delete(id);
    });
    if (session.pass.take(m as JSONRPCMessage)) return true;
    session.pending.delete(id);
    return false;
  }

  /** Notes the response each request of this POST is answered on, until it closes. */
  private track(session: McpSession, body: unknown, res: ServerResponse): void {
    for (const id of requestIds(body)) {
      session.streams.set(id, res);
      res.once("close", () => {
        if (session.streams.get(id) === res) session.streams.delete(id);
      });
    }
  }

  /**
   * Ends the stream of each request this POST cancels, once the cancellation has reached the
   * aggregator (through the SDK's transport, which hands it to the pass-through or the
   * SDK's own request handling): no answer will come on it.
   */
  private endCancelled(session: McpSession, body: unknown): void {
    for (const m of messagesOf(body)) {
      if (m.method !== "notifications/cancelled") continue;
      const id = (m.params as { requestId?: unknown } | undefined)?.requestId;
      const res = isId(id) ? session.streams.get(id) : undefined;
      if (!res || res.writableEnded) continue;
      session.streams.delete(id as JsonRpcId);
      session.pending.delete(id as JsonRpcId);
      if (!res.headersSent) res.writeHead(200, session.sseHeaders);
      res.end();
    }
  }

  private authorized(req: IncomingMessage, b: Bound): boolean {
    const header = req.headers.authorization;
    if (typeof header !== "string") return false;
    if (b.proven.get(req.socket) === header) return true;
    if (!header.startsWith("Bearer ")) return false;
    const presented = digest(header.slice("Bearer ".length).trim());
    if (!timingSafeEqual(presented, b.digest)) return false;
    b.proven.set(req.socket, header);
    return true;
  }

  /** A new MCP session (an initialize): one upstream connection of the session's aggregator. */
  private async connect(b: Bound): Promise<StreamableHTTPServerTransport> {
    const { StreamableHTTPServerTransport } = await loadTransport();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        Object.assign(session, answerHeaders(id));
        b.transports.set(id, session);
        for (const [old, t] of b.transports) {
          if (b.transports.size <= this.limits.maxMcpSessions) break;
          b.transports.delete(old);
          void t.transport.close().catch(() => {});
        }
        this.log.info({ evt: "mcp.http_connected", session: b.key, port: this.port, mcp_sessions: b.transports.size });
      },
      onsessionclosed: (id) => void b.transports.delete(id),
    });
    const session: McpSession = { transport, pending: new Map(), streams: new Map(), ...answerHeaders("") };
    transport.onclose = () => {
      const id = transport.sessionId;
      if (id && b.transports.get(id) === session) b.transports.delete(id);
      for (const res of session.pending.values()) res.destroy();
      session.pending.clear();
    };
    // The pass-through's answers: on the fast path's own response, else through the SDK transport.
    const sink: MessageSink = {
      sendMessage: (message, related) => {
        const answer = message.method === undefined;
        const key = (answer ? message.id : related) as string | number | undefined;
        const res = key === undefined ? undefined : session.pending.get(key);
        if (!res) {
          const options = related === undefined ? undefined : { relatedRequestId: related };
          return void transport.send(message as JSONRPCMessage, options).catch(() => {});
        }
        if (answer) session.pending.delete(key!);
        // An answer with nothing before it goes as one JSON body, which the agent's client
        // reads whole instead of through an SSE parser; a stream is opened only for progress.
        if (answer && !res.headersSent) {
          const text = JSON.stringify(message);
          res.writeHead(200, [...session.jsonHeaders, "Content-Length", String(Buffer.byteLength(text))]);
          return void res.end(text);
        }
        if (!res.headersSent) res.writeHead(200, session.sseHeaders);
        const frame = `event: message\ndata: ${JSON.stringify(message)}\n\n`;
        if (!answer) return void res.write(frame);
        res.end(frame);
      },
    };
    session.pass = await b.aggregator.serve(transport, sink);
    return transport;
  }

  private refuse(
    res: ServerResponse,
    status: number,
    reason: string,
    message: string,
    b?: Bound,
    opts: { code?: number; close?: boolean } = {},
  ): void {
    // An agent reconnecting after its MCP session was closed is routine; anything else is a misbehaving client.
    this.throttle.log(
      reason === "mcp session" ? "info" : "warn",
      reason,
      {
        evt: "mcp.http_refused",
        port: this.port,
        session: b?.key,
        status,
        reason,
        error: message,
      },
      `refused a request to the MCP endpoint (${status} ${reason})`,
    );
    if (res.headersSent) return void res.end();
    if (opts.close) res.setHeader("Connection", "close");
    res.writeHead(status, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: opts.code ?? -32000, message }, id: null }));
  }

  private failed(res: ServerResponse, err: unknown): void {
    this.log.warn({ evt: "mcp.http_error", port: this.port, session: this.bound?.key, error: (err as Error)?.message ?? String(err) });
    if (!res.headersSent) res.writeHead(500, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32603, message: "internal error in the MCP endpoint" }, id: null }));
  }
}
