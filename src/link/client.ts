/**
 * The proxy's end of the link: connects to the daemon's unix socket, authenticates
 * with the session token, fetches the manifest, forwards buzz tool calls and answers
 * the daemon's hook requests.
 */
import { connect, type Socket } from "node:net";
import { createMessageConnection, SocketMessageReader, SocketMessageWriter, type MessageConnection } from "vscode-jsonrpc/node";
import type { HookFanout } from "../contract/hooks.js";
import { manifestWire, type ProxyManifest } from "../contract/manifest.js";
import { BuzzCall, Hello, HookRan, LinkError, RunHook, type BuzzToolName, type RunHookParams } from "./protocol.js";

/** How long the proxy waits for the daemon's socket and hello answer (default 10 s: the daemon is local). */
const LINK_CONNECT_TIMEOUT_MS = 10_000;

/** Registered before the hello, so a hook request right after it waits for the proxy to be built. */
class HookSlot {
  private handler?: (p: RunHookParams) => Promise<HookFanout>;
  private waiters: (() => void)[] = [];
  set(handler: (p: RunHookParams) => Promise<HookFanout>): void {
    this.handler = handler;
    for (const w of this.waiters.splice(0)) w();
  }
  async run(p: RunHookParams): Promise<HookFanout> {
    if (!this.handler) await new Promise<void>((r) => this.waiters.push(r));
    return this.handler!(p);
  }
}

export class LinkClient {
  private constructor(
    private readonly conn: MessageConnection,
    private readonly socket: Socket,
    readonly manifest: ProxyManifest,
    private readonly hooks: HookSlot,
  ) {}

  static async connect(socketPath: string, token: string, timeoutMs = LINK_CONNECT_TIMEOUT_MS): Promise<LinkClient> {
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect(socketPath);
      const timer = setTimeout(() => {
        s.destroy();
        reject(new LinkError(`link ${socketPath}: no connection within ${timeoutMs} ms`));
      }, timeoutMs);
      s.once("connect", () => {
        clearTimeout(timer);
        resolve(s);
      });
      s.once("error", (err) => {
        clearTimeout(timer);
        reject(new LinkError(`link ${socketPath}: ${err.message}`));
      });
    });
    const conn = createMessageConnection(new SocketMessageReader(socket), new SocketMessageWriter(socket));
    const hooks = new HookSlot();
    conn.onRequest(RunHook, (p) => hooks.run(p));
    conn.listen();
    let hello;
    try {
      const timer = new Promise<never>((_, reject) =>
        setTimeout(() => reject(new LinkError(`link ${socketPath}: no hello answer within ${timeoutMs} ms`)), timeoutMs).unref(),
      );
      hello = await Promise.race([conn.sendRequest(Hello, { token, pid: process.pid }), timer]);
    } catch (err) {
      conn.dispose();
      socket.destroy();
      throw new LinkError(`link refused: ${(err as Error).message}`);
    }
    const manifest = manifestWire.safeParse(hello.manifest);
    if (!manifest.success) {
      conn.dispose();
      socket.destroy();
      throw new LinkError(`link sent an invalid manifest: ${manifest.error.message}`);
    }
    return new LinkClient(conn, socket, manifest.data, hooks);
  }

  callBuzzTool(tool: BuzzToolName, args: Record<string, unknown>): Promise<unknown> {
    return this.conn.sendRequest(BuzzCall, { tool, args });
  }

  /** Tells the daemon a merged hook ran (its /metrics count every fan-out). */
  hookRan(f: Pick<HookFanout, "verdict" | "ms">, hook: string): void {
    void this.conn.sendNotification(HookRan, { hook, verdict: f.verdict, ms: f.ms }).catch(() => undefined);
  }

  onRunHook(handler: (p: RunHookParams) => Promise<HookFanout>): void {
    this.hooks.set(handler);
  }

  onClose(handler: () => void): void {
    this.conn.onClose(handler);
  }

  close(): void {
    this.conn.dispose();
    this.socket.destroy();
  }
}
