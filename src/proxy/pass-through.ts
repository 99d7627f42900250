/**
 * `tools/call` to a downstream tool, forwarded as JSON-RPC messages without the SDK's
 * request machinery on either side of the aggregator (stdio proxy or HTTP endpoint). Profiled per proxied echo call, the
 * SDK's Client.request + Server dispatch cost more CPU than the rest of the proxy put
 * together: an AbortController, a timer armed and cleared (even for "no timeout"), a
 * zod guard on every response, a promise chain on each side. A pass-through needs none
 * of it: it maps the agent's request id to one of its own, renames the tool, and maps
 * the answer back. Everything else (hooks, built-in tools, calls to a server that is
 * down, resources, prompts) still goes through the SDK. With pre-tool gates, a call is
 * held here while the gates are asked (the route's `gate`), then sent the same way.
 *
 * What the SDK did for these calls is kept: progress (the caller's token is swapped for
 * ours and back), cancellation both ways, the per-server timeout (reset by progress),
 * downstream JSON-RPC errors and crashes turned into isError results.
 */
import { ErrorCode, type CallToolResult, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { errorResult, exitedDuring, refused, timedOut } from "./call-errors.js";

/** Writes one JSON-RPC message as a line; false when the connection is gone. */
export interface LineSink {
  sendLine(line: string): boolean;
}

/**
 * The agent's side of a connection, whatever carries it: sends one message. A notification
 * names the request it belongs to (`relatedRequestId`), so a transport that answers each
 * request on a stream of its own (Streamable HTTP) puts it on that request's stream.
 */
export interface MessageSink {
  sendMessage(message: Record<string, unknown>, relatedRequestId?: string | number): void;
}

export interface RawCallHandlers {
  /** The call's outcome, always a CallToolResult (failures become isError results). */
  done(result: CallToolResult): void;
  /** A downstream progress notification's params, without its progressToken. */
  progress?(params: Record<string, unknown>): void;
}

interface RawCall {
  id: string;
  tool: string;
  handlers: RawCallHandlers;
  timer?: NodeJS.Timeout;
}

/**
 * Our ids are strings with a prefix no SDK Client uses (its ids are numbers), so a
 * response is ours exactly when its id is in the table.
 */
const ID_PREFIX = "bb-";

/** The raw calls outstanding on one downstream connection (one per server start). */
export class RawCalls {
  private readonly calls = new Map<string, RawCall>();
  private seq = 0;
  private open = true;

  constructor(
    private readonly out: LineSink,
    private readonly server: string,
    /** Per-call timeout in ms (the Downstream always gives one: the server's, or the default); undefined for none. */
    private readonly timeoutMs?: number,
  ) {}

  get size(): number {
    return this.calls.size;
  }

  /**
   * Sends the call; returns its id for cancel(), or undefined when the connection is
   * gone (the caller falls back to the SDK path, which reports the server's state).
   */
  call(tool: string, params: Record<string, unknown>, handlers: RawCallHandlers): string | undefined {
    if (!this.open) return undefined;
    const id = ID_PREFIX + ++this.seq;
    // Only what the SDK path forwarded: other params (a `task`, say) would ask the server
    // for features this proxy does not advertise or relay.
    const sent: Record<string, unknown> = { name: tool, arguments: params.arguments ?? {} };
    const meta = params._meta as Record<string, unknown> | undefined;
    if (meta) {
      const { progressToken: _theirs, ...rest } = meta;
      const out = handlers.progress ? { ...rest, progressToken: id } : rest;
      if (Object.keys(out).length > 0) sent._meta = out;
    }
    return this.send(id, tool, JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: sent }), handlers);
  }

  /**
   * call() with arguments already serialized (a gate's input, made once for every gate),
   * and no _meta; the same message as call() would send.
   */
  callWithArguments(tool: string, argumentsJson: string, handlers: RawCallHandlers): string | undefined {
    if (!this.open) return undefined;
    const id = ID_PREFIX + ++this.seq;
    const line = `{"jsonrpc":"2.0","id":"${id}","method":"tools/call","params":{"name":${JSON.stringify(tool)},"arguments":${argumentsJson}}}`;
    return this.send(id, tool, line, handlers);
  }

  private send(id: string, tool: string, line: string, handlers: RawCallHandlers): string | undefined {
    if (!this.out.sendLine(line)) return undefined;
    const call: RawCall = { id, tool, handlers };
    this.calls.set(id, call);
    this.arm(call);
    return id;
  }

  /** The caller gave up: the server is told, and a late answer is dropped. */
  cancel(id: string, reason?: unknown): void {
    const call = this.calls.get(id);
    if (!call) return;
    this.forget(call);
    this.out.sendLine(
      JSON.stringify({
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: id, ...(reason === undefined ? {} : { reason }) },
      }),
    );
  }

  /** A message from the server: true when it belonged to one of our calls. */
  take(message: JSONRPCMessage): boolean {
    const m = message as {
      id?: unknown;
      method?: unknown;
      result?: unknown;
      error?: { code?: unknown; message?: unknown };
      params?: Record<string, unknown>;
    };
    if (m.method === undefined) {
      if (typeof m.id !== "string" || !m.id.startsWith(ID_PREFIX)) return false;
      const call = this.calls.get(m.id);
      if (!call) return true;
      this.forget(call);
      if (m.error !== undefined) {
        call.handlers.done(refused(this.server, call.tool, m.error));
      } else if (m.result === null || typeof m.result !== "object" || Array.isArray(m.result)) {
        call.handlers.done(errorResult(`MCP server '${this.server}' answered '${call.tool}' with something that is not a tool result`));
      } else {
        call.handlers.done(m.result as CallToolResult);
      }
      return true;
    }
    if (m.method === "notifications/progress") {
      const token = m.params?.progressToken;
      const call = typeof token === "string" ? this.calls.get(token) : undefined;
      if (!call) return false;
      this.arm(call);
      const { progressToken: _ours, ...rest } = m.params!;
      call.handlers.progress?.(rest);
      return true;
    }
    return false;
  }

  /** The connection closed: every outstanding call gets its isError result now. */
  closed(): void {
    this.open = false;
    for (const call of [...this.calls.values()]) {
      this.forget(call);
      call.handlers.done(exitedDuring(this.server, call.tool));
    }
  }

  private arm(call: RawCall): void {
    const ms = this.timeoutMs;
    if (ms === undefined) return;
    clearTimeout(call.timer);
    call.timer = setTimeout(() => {
      this.cancel(call.id, `timed out after ${ms} ms`);
      call.handlers.done(timedOut(this.server, call.tool, ms));
    }, ms);
  }

  private forget(call: RawCall): void {
    clearTimeout(call.timer);
    this.calls.delete(call.id);
  }
}

/**
 * Runs a call after the pre-tool gates allow it (proxy/tool-gates.ts): `send` makes the call,
 * or gives undefined when the connection has gone since the route was chosen (the gate then
 * has the call made another way). Its promise rejects when the agent cancelled the call.
 */
export type GatedSend = (args: unknown, send: () => Promise<CallToolResult> | undefined) => Promise<CallToolResult>;

/** Where an exposed tool name leads, when that server can take a raw call now; `gate` when the call is to be asked first. */
export type RawRoute = (name: string) => { raw: RawCalls; tool: string; gate?: GatedSend } | undefined;

/** The agent cancelled a gated call before its answer: nothing is sent back (MCP: a cancelled request gets no response). */
class Cancelled extends Error {}

interface InFlight {
  raw: RawCalls;
  /** Our id downstream, once the call is sent (a gated call is first asked). */
  id?: string;
  cancelled?: boolean;
  /** Ends a gated call's wait for its answer when the agent cancels it. */
  abandon?: (err: Cancelled) => void;
}

/** The agent's side: its tools/call that can go raw, and its cancellations of them. */
export class AgentPassThrough {
  private readonly inFlight = new Map<string | number, InFlight>();

  constructor(
    private readonly upstream: MessageSink,
    private readonly route: RawRoute,
  ) {}

  /** A message from the agent: true when it was handled here, false for the SDK's path. */
  take(message: JSONRPCMessage): boolean {
    const m = message as { id?: unknown; method?: unknown; params?: Record<string, unknown> };
    if (m.method === "tools/call" && (typeof m.id === "number" || typeof m.id === "string")) return this.forward(m.id, m.params ?? {});
    if (m.method === "notifications/cancelled") {
      const requestId = m.params?.requestId as string | number | undefined;
      const entry = requestId === undefined ? undefined : this.inFlight.get(requestId);
      if (!entry) return false;
      this.inFlight.delete(requestId!);
      entry.cancelled = true;
      if (entry.id !== undefined) entry.raw.cancel(entry.id, m.params?.reason);
      entry.abandon?.(new Cancelled());
      return true;
    }
    return false;
  }

  private forward(upId: string | number, params: Record<string, unknown>): boolean {
    if (typeof params.name !== "string") return false;
    const target = this.route(params.name);
    if (!target) return false;
    const token = (params._meta as { progressToken?: unknown } | undefined)?.progressToken;
    const progress =
      typeof token === "string" || typeof token === "number"
        ? (p: Record<string, unknown>) =>
            this.upstream.sendMessage({ jsonrpc: "2.0", method: "notifications/progress", params: { ...p, progressToken: token } }, upId)
        : undefined;
    const answer = (entry: InFlight, result: CallToolResult) => {
      if (this.inFlight.get(upId) === entry) this.inFlight.delete(upId);
      this.upstream.sendMessage({ jsonrpc: "2.0", id: upId, result });
    };
    if (!target.gate) {
      const entry: InFlight = { raw: target.raw };
      entry.id = target.raw.call(target.tool, params, { done: (result) => answer(entry, result), progress });
      if (entry.id === undefined) return false;
      this.inFlight.set(upId, entry);
      return true;
    }
    const entry: InFlight = { raw: target.raw };
    this.inFlight.set(upId, entry);
    const send = (): Promise<CallToolResult> | undefined => {
      if (entry.cancelled) return Promise.reject(new Cancelled());
      let done!: (result: CallToolResult) => void;
      const answered = new Promise<CallToolResult>((resolve, reject) => {
        done = resolve;
        entry.abandon = reject;
      });
      entry.id = target.raw.call(target.tool, params, { done, progress });
      return entry.id === undefined ? undefined : answered;
    };
    target.gate(params.arguments, send).then(
      (result) => {
        if (!entry.cancelled) answer(entry, result);
      },
      (err: unknown) => {
        if (entry.cancelled || err instanceof Cancelled) return;
        if (this.inFlight.get(upId) === entry) this.inFlight.delete(upId);
        this.upstream.sendMessage({
          jsonrpc: "2.0",
          id: upId,
          error: { code: ErrorCode.InternalError, message: (err as Error)?.message ?? String(err) },
        });
      },
    );
    return true;
  }
}
