/**
 * The daemon's end of the link: one unix socket (mode 0600, in state_dir) shared by all
 * sessions, and, per session, a socket of its own in its agent process's link directory
 * (the only part of the state directory a sandboxed agent sees), which accepts that
 * session's token alone. Each session registers and gets a capability token, handed to
 * its proxy through the proxy's env; a connection that does not present a registered
 * token as its first request is refused and logged. Authenticated proxies fetch their manifest, call
 * the session's buzz tools, and answer the daemon's hook requests.
 */
import { DEFAULT_PRE_TOOL_DEADLINE_MS } from "../contract/manifest.js";
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, rmSync } from "node:fs";
import { createServer, type Server as NetServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { BUZZ_LINK_ARGS } from "../contract/buzz-tool-schemas.js";
import { checkBuzzCall, dispatchBuzzTool, type BuzzToolHandlers } from "./buzz-call.js";
import type { HookFanout } from "../contract/hooks.js";
import type { ProxyManifest } from "../contract/manifest.js";
import type { Logger } from "../base/log.js";
import {
  BuzzCall,
  Hello,
  HookRan,
  LINK_ENV,
  LINK_TOKEN_ENV,
  LinkError,
  LinkErrorCode,
  RunHook,
  RunHookResult,
  type RunHookParams,
} from "./protocol.js";
import type { LinkPeer } from "./peer.js";

/** The SDK's protocol, loaded with the first connection (peer.ts says why), once. */
let peerModule: Promise<typeof import("./peer.js")> | undefined;
const loadPeer = () => (peerModule ??= import("./peer.js"));

export type { BuzzToolHandlers } from "./buzz-call.js";

export interface LinkSession {
  /** Add to the proxy's env (the `mcpServers` entry): the shared socket's path and the token. */
  env: Record<string, string>;
  /**
   * Listens on a socket of this session's own, `<dir>/link.sock` (dir: the agent process's
   * link directory), that accepts only this session's token; resolves to the proxy's env
   * pointing there. Closed by unregister.
   */
  listen(dir: string): Promise<Record<string, string>>;
  /** Asks the session's proxy to run the merged hook; `servers` limits it to some servers. */
  runHook(name: string, opts?: { servers?: string[]; args?: Record<string, unknown> }): Promise<HookFanout>;
  connected(): boolean;
  /**
   * Resolves true once the session's proxy is connected (at once if it is), false when
   * `withinMs` pass first or the session is unregistered.
   */
  whenConnected(withinMs: number): Promise<boolean>;
  unregister(): void;
}

/** A proxy must say hello within this long after connecting (default 10 s). */
const HELLO_TIMEOUT_MS = 10_000;
/** Slack on top of the session's hook_deadline for the link round trip. */
const HOOK_LINK_SLACK_MS = 3000;

interface Entry {
  key: string;
  manifest: ProxyManifest;
  tools: BuzzToolHandlers;
  conn?: LinkPeer;
  /** Waiting for a proxy to say hello (whenConnected); woken by the hello or unregister. */
  waiters: Set<() => void>;
}

const digest = (token: string) => createHash("sha256").update(token).digest("hex");

/** A session's own socket in its process's link directory. */
const SESSION_SOCKET_NAME = "link.sock";

/** sockaddr_un holds 108 bytes on Linux (104 on macOS); longer paths cannot be bound. */
const MAX_SOCKET_PATH_BYTES = 100;

/**
 * The path proxies are given: absolute, because the agent starts the proxy in its own
 * working directory; moved to the temp dir (still mode 0600) when state_dir is too deep
 * for a unix socket path.
 */
export function linkSocketPath(wanted: string): string {
  const abs = resolve(wanted);
  if (Buffer.byteLength(abs) <= MAX_SOCKET_PATH_BYTES) return abs;
  return join(tmpdir(), `buzz-bridge-${createHash("sha256").update(abs).digest("hex").slice(0, 16)}.sock`);
}

/**
 * Where the per-process link directories go: `<state_dir>/link`, or a directory in the temp
 * dir when that is too deep for `<root>/<n>/link.sock` to fit a unix socket path.
 */
export function linkRootPath(stateDir: string): string {
  const root = resolve(stateDir, "link");
  if (Buffer.byteLength(join(root, "1234567", SESSION_SOCKET_NAME)) <= MAX_SOCKET_PATH_BYTES) return root;
  return join(tmpdir(), `buzz-bridge-${createHash("sha256").update(root).digest("hex").slice(0, 16)}`);
}

/** Hooks counted under their own name in /metrics; any other is `other`. */
const COUNTED_HOOKS: ReadonlySet<string> = new Set(["_Stop", "_PostCompact", "_PreToolUse"]);

export class LinkServer {
  private server?: NetServer;
  private readonly sessions = new Map<string, Entry>();
  private readonly sockets = new Set<Socket>();
  /** Sessions' own listeners (see LinkSession.listen). */
  private readonly own = new Set<NetServer>();

  private readonly path: string;

  constructor(
    private readonly opts: {
      socketPath: string;
      logger: Logger;
      /**
       * A session's proxy ran a merged hook. `hook` is `_Stop`, `_PostCompact`, `_PreToolUse` (verdict `object` = the call was blocked) or `other`, and
       * `verdict` `allow` or `object`: what a proxy (the agent's to run) says is bounded here.
       */
      onHookRan?(hook: string, verdict: "allow" | "object", ms: number): void;
    },
  ) {
    this.path = linkSocketPath(opts.socketPath);
  }

  /**
   * A session's merged hook ran: over the link from a stdio proxy, or in the daemon for an
   * HTTP slot. What a proxy (the agent's to run) says is bounded here: an unknown verdict is
   * not counted, an unknown hook counts as `other`.
   */
  hookRan(p: { hook?: unknown; verdict?: unknown; ms?: unknown }): void {
    if (p.verdict !== "allow" && p.verdict !== "object") return;
    const hook = typeof p.hook === "string" && COUNTED_HOOKS.has(p.hook) ? p.hook : "other";
    const ms = typeof p.ms === "number" && Number.isFinite(p.ms) && p.ms >= 0 ? p.ms : 0;
    this.opts.onHookRan?.(hook, p.verdict, ms);
  }

  /** The absolute path proxies connect to (see linkSocketPath). */
  get socketPath(): string {
    return this.path;
  }

  async start(): Promise<void> {
    const path = this.path;
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    // A socket file left by a crashed daemon would make listen fail with EADDRINUSE.
    rmSync(path, { force: true });
    const server = createServer((socket) => this.accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once("error", (err) => reject(new LinkError(`cannot listen on link socket ${path}: ${err.message}`)));
      server.listen(path, () => resolve());
    });
    chmodSync(path, 0o600);
    this.server = server;
    this.opts.logger.info({
      evt: "link.listening",
      path,
      ...(path !== resolve(this.opts.socketPath) ? { wanted: this.opts.socketPath, why: "state_dir too deep for a unix socket path" } : {}),
    });
  }

  async stop(): Promise<void> {
    for (const e of this.sessions.values()) hangUp(e);
    for (const s of this.sockets) s.destroy();
    for (const s of this.own) s.close();
    this.own.clear();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = undefined;
    rmSync(this.path, { force: true });
  }

  register(s: { sessionKey: string; manifest: ProxyManifest; tools: BuzzToolHandlers }): LinkSession {
    const token = randomBytes(32).toString("base64url");
    const id = digest(token);
    const entry: Entry = { key: s.sessionKey, manifest: s.manifest, tools: s.tools, waiters: new Set() };
    this.sessions.set(id, entry);
    let own: { server: NetServer; path: string } | undefined;
    return {
      env: { [LINK_ENV]: this.path, [LINK_TOKEN_ENV]: token },
      listen: async (dir) => {
        if (own) return { [LINK_ENV]: own.path, [LINK_TOKEN_ENV]: token };
        const path = join(dir, SESSION_SOCKET_NAME);
        rmSync(path, { force: true });
        const server = createServer((socket) => this.accept(socket, id));
        await new Promise<void>((resolve, reject) => {
          server.once("error", (err) => reject(new LinkError(`cannot listen on session link socket ${path}: ${err.message}`)));
          server.listen(path, () => resolve());
        });
        chmodSync(path, 0o600);
        own = { server, path };
        this.own.add(server);
        return { [LINK_ENV]: path, [LINK_TOKEN_ENV]: token };
      },
      connected: () => entry.conn !== undefined,
      whenConnected: (withinMs) => {
        if (entry.conn) return Promise.resolve(true);
        if (!this.sessions.has(id)) return Promise.resolve(false);
        return new Promise<boolean>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            entry.waiters.delete(done);
            resolve(entry.conn !== undefined);
          };
          const timer = setTimeout(done, withinMs);
          entry.waiters.add(done);
        });
      },
      unregister: () => {
        this.sessions.delete(id);
        hangUp(entry);
        wakeAll(entry);
        if (own) {
          this.own.delete(own.server);
          own.server.close();
          rmSync(own.path, { force: true });
          own = undefined;
        }
      },
      runHook: async (name, opts) => {
        const conn = entry.conn;
        if (!conn) throw new LinkError(`session ${entry.key}: its MCP proxy is not connected, cannot run ${name}`);
        const deadline =
          name === "_PreToolUse" ? (entry.manifest.pre_tool_deadline ?? DEFAULT_PRE_TOOL_DEADLINE_MS) : entry.manifest.hook_deadline;
        const limit = deadline + HOOK_LINK_SLACK_MS;
        const params: RunHookParams = { name, servers: opts?.servers, ...(opts?.args ? { args: opts.args } : {}) };
        try {
          return await conn.request({ method: RunHook.shape.method.value, params }, RunHookResult, { timeout: limit });
        } catch (err) {
          // A connection exists, so its module is loaded.
          const { isTimeout, asLinkError } = await loadPeer();
          if (isTimeout(err)) throw new LinkError(`session ${entry.key}: proxy gave no ${name} answer within ${limit} ms`);
          throw new LinkError(`session ${entry.key}: ${name} over the link failed: ${asLinkError(err).message}`);
        }
      },
    };
  }

  /** `only`: the token digest a session's own socket accepts; any other hello is refused. */
  private accept(socket: Socket, only?: string): void {
    this.sockets.add(socket);
    socket.on("close", () => this.sockets.delete(socket));
    // What the proxy sends meanwhile waits in the socket, read once the transport is open;
    // a reset meanwhile only closes it.
    const early = () => undefined;
    socket.on("error", early);
    loadPeer().then(
      ({ LinkPeer }) => {
        socket.off("error", early);
        if (!socket.destroyed) this.speak(socket, new LinkPeer(), only);
      },
      (err: unknown) => {
        this.opts.logger.warn({ evt: "link.refused", reason: `the link's protocol could not be loaded: ${(err as Error).message}` });
        socket.destroy();
      },
    );
  }

  private speak(socket: Socket, conn: LinkPeer, only: string | undefined): void {
    let entry: Entry | undefined;
    const log = this.opts.logger;
    const helloTimer = setTimeout(() => {
      if (!entry) {
        log.warn({ evt: "link.refused", reason: "no hello" });
        socket.destroy();
      }
    }, HELLO_TIMEOUT_MS);
    helloTimer.unref();

    conn.setRequestHandler(Hello, ({ params: p }) => {
      const presented = typeof p?.token === "string" ? digest(p.token) : undefined;
      const found = presented !== undefined && (only === undefined || presented === only) ? this.sessions.get(presented) : undefined;
      if (!found) {
        log.warn({ evt: "link.refused", reason: "unknown or revoked token", proxy_pid: p?.pid });
        setTimeout(() => socket.destroy(), 50);
        throw new LinkError("link refused: unknown or revoked token", LinkErrorCode.Unauthorized);
      }
      clearTimeout(helloTimer);
      entry = found;
      // A proxy restarted by the agent replaces the old connection.
      if (found.conn !== conn) hangUp(found);
      found.conn = conn;
      log.info({ evt: "link.connected", session: found.key, proxy_pid: p?.pid }); // `pid` is the daemon's own
      wakeAll(found);
      return { manifest: found.manifest };
    });

    conn.setNotificationHandler(HookRan, ({ params: p }) => {
      if (entry && this.isLive(entry)) this.hookRan(p ?? {});
    });

    conn.setRequestHandler(BuzzCall, async ({ params: p }) => {
      if (!entry || !this.isLive(entry))
        throw new LinkError("link refused: say hello with a valid token first", LinkErrorCode.Unauthorized);
      const call = checkBuzzCall(p?.tool, p?.args, BUZZ_LINK_ARGS);
      if ("error" in call) throw new LinkError(call.error, LinkErrorCode.ToolFailed);
      try {
        return { value: await dispatchBuzzTool(entry.tools, call.tool, call.args) };
      } catch (err) {
        log.warn({ evt: "link.tool_failed", session: entry.key, tool: call.tool, error: (err as Error).message });
        throw new LinkError((err as Error).message, LinkErrorCode.ToolFailed);
      }
    });

    conn.onclose = () => {
      if (entry && entry.conn === conn) {
        entry.conn = undefined;
        log.info({ evt: "link.disconnected", session: entry.key });
      }
    };
    void conn.open(socket);
  }

  private isLive(entry: Entry): boolean {
    for (const e of this.sessions.values()) if (e === entry) return true;
    return false;
  }
}

/** Closes the session's connection from this end: detached first, so only a proxy that went away logs link.disconnected. */
function hangUp(entry: Entry): void {
  const conn = entry.conn;
  entry.conn = undefined;
  void conn?.close();
}

function wakeAll(entry: Entry): void {
  for (const wake of [...entry.waiters]) wake();
}
