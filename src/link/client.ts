/**
 * The proxy's end of the link: connects to the daemon's unix socket, authenticates
 * with the session token, fetches the manifest, forwards buzz tool calls and answers
 * the daemon's hook requests.
 */
import { connect, type Socket } from "node:net";
import type { HookFanout } from "../contract/hooks.js";
import { manifestWire, type ProxyManifest } from "../contract/manifest.js";
import {
  BuzzCall,
  BuzzCallResult,
  Hello,
  HelloResult,
  HookRan,
  LinkError,
  NO_LINK_TIMEOUT_MS,
  RunHook,
  type BuzzCallParams,
  type BuzzToolName,
  type HelloParams,
  type HookRanParams,
  type RunHookParams,
} from "./protocol.js";
import { asLinkError, isTimeout, LinkPeer } from "./peer.js";

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
  private readonly closeHandlers: (() => void)[] = [];

  private constructor(
    private readonly peer: LinkPeer,
    readonly manifest: ProxyManifest,
    private readonly hooks: HookSlot,
  ) {
    peer.onclose = () => {
      for (const h of this.closeHandlers) h();
    };
  }

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
    const peer = new LinkPeer();
    const hooks = new HookSlot();
    // A HookFanout as a plain object: the SDK types a result with an index signature.
    peer.setRequestHandler(RunHook, async (r) => ({ ...(await hooks.run(r.params)) }));
    await peer.open(socket);
    let hello;
    try {
      const params: HelloParams = { token, pid: process.pid };
      hello = await peer.request({ method: Hello.shape.method.value, params }, HelloResult, { timeout: timeoutMs });
    } catch (err) {
      await peer.close();
      const why = isTimeout(err) ? `link ${socketPath}: no hello answer within ${timeoutMs} ms` : asLinkError(err).message;
      // The daemon's refusals say "link refused: …" themselves.
      throw new LinkError(why.startsWith("link refused: ") ? why : `link refused: ${why}`);
    }
    const manifest = manifestWire.safeParse(hello.manifest);
    if (!manifest.success) {
      await peer.close();
      throw new LinkError(`link sent an invalid manifest: ${manifest.error.message}`);
    }
    return new LinkClient(peer, manifest.data, hooks);
  }

  async callBuzzTool(tool: BuzzToolName, args: Record<string, unknown>): Promise<unknown> {
    const params: BuzzCallParams = { tool, args };
    try {
      const r = await this.peer.request({ method: BuzzCall.shape.method.value, params }, BuzzCallResult, { timeout: NO_LINK_TIMEOUT_MS });
      return r.value;
    } catch (err) {
      throw asLinkError(err);
    }
  }

  /** Tells the daemon a merged hook ran (its /metrics count every fan-out). */
  hookRan(f: Pick<HookFanout, "verdict" | "ms">, hook: string): void {
    const params: HookRanParams = { hook, verdict: f.verdict, ms: f.ms };
    void this.peer.notification({ method: HookRan.shape.method.value, params }).catch(() => undefined);
  }

  onRunHook(handler: (p: RunHookParams) => Promise<HookFanout>): void {
    this.hooks.set(handler);
  }

  onClose(handler: () => void): void {
    this.closeHandlers.push(handler);
  }

  /** Closes the link from this end; onClose handlers are for a daemon that went away. */
  close(): void {
    this.closeHandlers.length = 0;
    void this.peer.close();
  }
}
