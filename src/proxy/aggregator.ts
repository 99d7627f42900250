/**
 * The aggregation itself, independent of how the agent reaches it: one session's
 * downstream servers, the catalog of names, the merged hooks and the built-in buzz tools,
 * served to any number of upstream MCP connections. The stdio proxy (`mcp-proxy`,
 * ./server.ts) serves one connection over its stdin/stdout; the daemon's HTTP endpoint
 * (./http-endpoint.ts) serves each Streamable HTTP session of an agent that speaks MCP
 * over HTTP. Both run this one definition, so naming, hooks, cancellation and progress
 * behave the same whichever transport carries them (docs/architecture.md §4).
 *
 * `initialize` is answered at once (and `server/discover` refused at once: docs/protocol.md §9); everything else first waits for every downstream to
 * have listed or failed (bounded by list_timeout). tools/call to a downstream server that
 * is up never reaches the SDK: it is forwarded as messages (./pass-through.ts). The rest
 * (hooks, buzz tools, calls while a server is down or the first listing still runs) is
 * served from the Server's fallback handler: the SDK's registered tools/call handler
 * re-validates the request and the result with zod on every call, which forwarding does
 * not need.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  ErrorCode,
  GetPromptRequestSchema,
  GetPromptResultSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  ReadResourceResultSchema,
  type CallToolResult,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type Prompt,
  type Resource,
  type ResourceTemplate,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../base/log.js";
import type { HookFanout } from "../contract/hooks.js";
import { BUZZ_TOOLS, callBuzzTool, isBuzzTool, type BuzzToolPort } from "./buzz-tool-listing.js";
import { buildCatalog, type Catalog } from "./catalog.js";
import { errorResult } from "./call-errors.js";
import { Downstream, type DownstreamWrap } from "./downstream.js";
import { routeRequestsDirectly } from "./fast-path.js";
import { runHookFanout } from "./hooks.js";
import type { ProxyManifest } from "./manifest.js";
import { exposedName, isHookName } from "./naming.js";
import { LineTransport } from "../base/line-transport.js";
import { AgentPassThrough, type MessageSink, type RawRoute } from "./pass-through.js";
import { PROXY_VERSION } from "./version.js";
import { CALL_HOOKS, PRE_TOOL_HOOK, ToolGates, type GatedCall } from "./tool-gates.js";
import { DEFAULT_PRE_TOOL_DEADLINE_MS } from "../contract/manifest.js";

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

const STOP_HOOK = "_Stop";
/** MCP 2026-07-28's opening probe; this slot speaks 2025-11-25 and earlier, and answers it Method not found. */
const DISCOVER = "server/discover";
/** The `_Stop` listed for `stop: wait` gates none of which is up to list its own. */
const STOP_HOOK_TOOL: Tool = {
  name: STOP_HOOK,
  description: "Ask this session's stop gates whether the turn may end; an empty answer means it may.",
  inputSchema: { type: "object", properties: {} },
};

/**
 * A JSON-RPC error whose message reaches the agent as written (McpError would prefix
 * "MCP error -326xx:" once here and once more in the agent's client).
 */
class ProxyRequestError extends Error {
  override name = "ProxyRequestError";
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export interface AggregatorOptions {
  manifest: ProxyManifest;
  logger: Logger;
  /** Where the built-in buzz tools go (the link, or the daemon's handlers); without it there are none. */
  buzz?: BuzzToolPort;
  /** Runs each downstream server some other way than as itself (in the agent's sandbox); default as itself (./downstream.ts). */
  wrap?: DownstreamWrap;
  /** Hears of every merged hook run, asked by the daemon or called by the agent (the daemon's /metrics). */
  hookRan?(fanout: HookFanout, hook: string): void;
}

type ListKind = "tools" | "resources" | "prompts";

/**
 * The SDK's server (with its JSON-schema validator, ajv) loads with the first connection,
 * not with the daemon: an idle daemon does not hold it (bench figure 7).
 */
let serverModule: Promise<typeof import("@modelcontextprotocol/sdk/server/index.js")> | undefined;
const loadServer = () => (serverModule ??= import("@modelcontextprotocol/sdk/server/index.js"));

export class Aggregator {
  readonly downstreams: Downstream[];
  private catalog?: Catalog;
  private readyPromise?: Promise<void>;
  /** ready() has resolved: calls skip waiting for it. */
  private isReady = false;
  private readonly builtins: Tool[];
  /** The upstream connections being served, and those that have listed (list_changed goes to them). */
  private readonly upstreams = new Set<Server>();
  private readonly listed = new WeakSet<Server>();
  private started = false;
  /** The servers asked around every tool call (`pre_tool`), for both transports (./tool-gates.ts). */
  readonly toolGates: ToolGates;

  constructor(private readonly opts: AggregatorOptions) {
    const { manifest, logger } = opts;
    this.builtins = opts.buzz ? BUZZ_TOOLS : [];
    this.downstreams = manifest.servers.map(
      (cfg) =>
        new Downstream(cfg, {
          logger,
          listTimeoutMs: manifest.list_timeout,
          events: { changed: (kind) => this.onChanged(kind) },
          wrap: opts.wrap,
        }),
    );
    this.toolGates = new ToolGates({
      downstreams: this.downstreams,
      deadlineMs: manifest.pre_tool_deadline ?? DEFAULT_PRE_TOOL_DEADLINE_MS,
      logger,
      hookRan: opts.hookRan,
    });
  }

  /** Starts every downstream in parallel (once). */
  start(): void {
    if (this.started) return;
    this.started = true;
    for (const ds of this.downstreams) void ds.start();
  }

  /**
   * Serves one upstream connection on `transport`; the Server closes with it. tools/call that
   * the raw path can take never reaches the Server (./pass-through.ts): on a line transport its
   * lines are intercepted; on any other the SDK's messages, and the answers go back through
   * `sink` (default the transport's own `send`). The pass-through is returned for a transport
   * that takes calls itself (the HTTP endpoint's fast path).
   */
  async serve(transport: Transport, sink?: MessageSink): Promise<AgentPassThrough> {
    const { Server } = await loadServer();
    const server = new Server(
      { name: "buzz-bridge", version: PROXY_VERSION },
      { capabilities: { tools: { listChanged: true }, resources: { listChanged: true }, prompts: { listChanged: true } } },
    );
    server.onerror = (err) => this.opts.logger.warn({ evt: "proxy.upstream_error", error: err.message });
    this.installHandlers(server);
    this.upstreams.add(server);
    server.onclose = () => this.upstreams.delete(server);
    await server.connect(transport);
    routeRequestsDirectly(server as never, transport);
    return this.passThrough(transport, sink);
  }

  /**
   * Downstream servers start with the first message that is not a `server/discover` probe
   * (docs/protocol.md §9): an MCP 2026-07-28 client probing on stdio spawns a throwaway copy
   * of the proxy, asks it `server/discover` alone, and is answered -32601 (Method not found)
   * at once, so it falls back to `initialize`; that copy never starts the session's servers.
   */
  private noteMessage(message: JSONRPCMessage): void {
    if (this.started) return;
    if ((message as { method?: unknown }).method === DISCOVER) return;
    this.start();
  }

  private passThrough(transport: Transport, sink?: MessageSink): AgentPassThrough {
    if (transport instanceof LineTransport) {
      const pass = new AgentPassThrough(transport, this.rawRoute);
      transport.intercept = (message) => {
        this.noteMessage(message);
        return pass.take(message);
      };
      return pass;
    }
    const pass = new AgentPassThrough(
      sink ?? {
        sendMessage: (message, related) =>
          void transport
            .send(message as JSONRPCMessage, related === undefined ? undefined : { relatedRequestId: related })
            .catch((err: Error) => this.opts.logger.debug({ evt: "proxy.upstream_error", error: err.message })),
      },
      this.rawRoute,
    );
    const sdk = transport.onmessage;
    if (sdk)
      transport.onmessage = (message, extra) => {
        this.noteMessage(message);
        if (!pass.take(message)) sdk.call(transport, message, extra);
      };
    return pass;
  }

  /**
   * A downstream tool whose server is up takes the raw path (./pass-through.ts); anything else
   * the SDK's. With gates, the raw path holds the call for gatedCall, the one check both paths
   * and both transports share.
   */
  readonly rawRoute: RawRoute = (name) => {
    if (!this.isReady) return undefined;
    const route = this.getCatalog().routes.get(name);
    const raw = route?.ds.rawCalls();
    if (!raw) return undefined;
    if (!this.toolGates.active) return { raw, tool: route!.tool };
    const { ds, tool } = route!;
    return {
      raw,
      tool,
      // The server went away after the route was chosen: ds.call reports its state.
      gate: (args, send) =>
        this.gatedCall(
          { tool: name, server: ds.name, arguments: args ?? {} },
          () => send() ?? ds.call(tool, args as Record<string, unknown>, {}),
        ),
    };
  };

  async stop(): Promise<void> {
    await Promise.allSettled(this.downstreams.map((ds) => ds.stop()));
    await Promise.allSettled([...this.upstreams].map((s) => s.close()));
    this.upstreams.clear();
  }

  /** Every downstream listed or failed, or list_timeout passed: whichever is first. */
  ready(): Promise<void> {
    this.readyPromise ??= new Promise<void>((done) => {
      const resolve = () => {
        this.isReady = true;
        done();
      };
      const timer = setTimeout(() => {
        const waiting = this.downstreams.filter((d) => d.state === "starting").map((d) => d.name);
        this.opts.logger.error({ evt: "proxy.list_timeout", ms: this.opts.manifest.list_timeout, waiting });
        resolve();
      }, this.opts.manifest.list_timeout);
      void Promise.all(this.downstreams.map((d) => d.settled())).then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    return this.readyPromise;
  }

  private getCatalog(): Catalog {
    this.catalog ??= buildCatalog(this.downstreams, this.builtins, this.opts.logger);
    return this.catalog;
  }

  private onChanged(kind: ListKind): void {
    if (kind === "tools") this.catalog = undefined;
    const told = [...this.upstreams].filter((s) => this.listed.has(s));
    if (told.length === 0) return;
    // Some agents (buzz-agent) never re-list; the log says so when tools change.
    this.opts.logger.warn({ evt: "proxy.list_changed", kind });
    for (const s of told) {
      const send =
        kind === "tools" ? s.sendToolListChanged() : kind === "resources" ? s.sendResourceListChanged() : s.sendPromptListChanged();
      void send.catch(() => {});
    }
  }

  /** The merged hook, for the agent's tools/call and for the daemon (over the link, or directly). */
  async runHook(name: string, only?: string[], args?: Record<string, unknown>): Promise<HookFanout> {
    this.start();
    await this.ready();
    if (name === PRE_TOOL_HOOK) return this.agentToolCall(args ?? {});
    let targets = this.hookTargets(name);
    if (only) targets = targets.filter((d) => only.includes(d.name));
    return this.fanout(name, targets);
  }

  /**
   * An agent-native tool (shell, edit, fetch) the agent asks its client permission for
   * (ACP `session/request_permission`): the same `_PreToolUse` as an MCP call, `server` `agent`.
   * `object` = blocked (the text says why); advice has no result to go before, so it only allows.
   */
  private async agentToolCall(args: Record<string, unknown>): Promise<HookFanout> {
    const str = (v: unknown) => (typeof v === "string" ? v : undefined);
    const tool = str(args.tool) ?? str(args.title) ?? "unknown tool";
    const d = await this.toolGates.before({
      tool,
      server: "agent",
      arguments: args.arguments ?? {},
      title: str(args.title),
      kind: str(args.kind),
    });
    return { text: d.verdict === "block" ? d.text : "", verdict: d.verdict === "block" ? "object" : "allow", ms: d.ms, servers: [] };
  }

  /** One merged hook run; the daemon hears of each (its /metrics). */
  private async fanout(name: string, targets: Downstream[], args?: Record<string, unknown>): Promise<HookFanout> {
    const r = await runHookFanout(name, targets, { deadlineMs: this.opts.manifest.hook_deadline, logger: this.opts.logger, args });
    this.opts.hookRan?.(r, name);
    return r;
  }

  /**
   * Who answers `hook`: the servers that list it and, for `_Stop`, every `stop: wait` server
   * that is not up. A gate that never started has listed nothing; left out, it would be
   * taken for a gate that has no objection (docs/architecture.md §4).
   */
  private hookTargets(hook: string): Downstream[] {
    const listed = this.getCatalog().hooks.get(hook) ?? [];
    if (hook !== STOP_HOOK) return listed;
    const down = this.downstreams.filter((d) => d.cfg.stop === "wait" && d.state !== "ready" && !listed.includes(d));
    return down.length ? this.downstreams.filter((d) => listed.includes(d) || down.includes(d)) : listed;
  }

  private installHandlers(s: Server): void {
    s.setRequestHandler(ListToolsRequestSchema, async () => {
      await this.ready();
      this.listed.add(s);
      const cat = this.getCatalog();
      if (cat.collision) throw new ProxyRequestError(ErrorCode.InternalError, cat.collision.message);
      // A declared `stop: wait` gate that could not list its `_Stop` still has one: an agent
      // that calls hooks itself must be able to ask, and hear that the gate is down.
      if (!cat.hooks.has(STOP_HOOK) && this.hookTargets(STOP_HOOK).length > 0) return { tools: [...cat.tools, STOP_HOOK_TOOL] };
      return { tools: cat.tools };
    });
    s.fallbackRequestHandler = (request: JSONRPCRequest, extra: Extra) => {
      if (request.method !== "tools/call")
        return Promise.reject(new ProxyRequestError(ErrorCode.MethodNotFound, `Method not found: ${request.method}`));
      if (this.isReady) return this.callTool(request, extra);
      return this.ready().then(() => this.callTool(request, extra));
    };
    s.setRequestHandler(ListResourcesRequestSchema, async () => {
      await this.ready();
      return {
        resources: this.union(
          (d) => d.resources,
          (d, r) => ({ ...r, name: this.label(d, r.name) }),
        ),
      };
    });
    s.setRequestHandler(ListResourceTemplatesRequestSchema, async () => {
      await this.ready();
      return {
        resourceTemplates: this.union(
          (d) => d.templates,
          (d, r) => ({ ...r, name: this.label(d, r.name) }),
        ),
      };
    });
    s.setRequestHandler(ReadResourceRequestSchema, async (req, extra) => {
      await this.ready();
      const ds = this.resourceOwner(req.params.uri);
      if (!ds) throw new ProxyRequestError(ErrorCode.InvalidParams, `no MCP server of this session offers resource ${req.params.uri}`);
      return ds.request("resources/read", req.params, ReadResourceResultSchema, { signal: extra.signal });
    });
    s.setRequestHandler(ListPromptsRequestSchema, async () => {
      await this.ready();
      return {
        prompts: this.union(
          (d) => d.prompts,
          (d, p) => ({ ...p, name: this.label(d, p.name) }),
        ),
      };
    });
    s.setRequestHandler(GetPromptRequestSchema, async (req, extra) => {
      await this.ready();
      for (const d of this.downstreams) {
        const p = d.prompts.find((p: Prompt) => this.label(d, p.name) === req.params.name);
        if (p) return d.request("prompts/get", { ...req.params, name: p.name }, GetPromptResultSchema, { signal: extra.signal });
      }
      throw new ProxyRequestError(ErrorCode.InvalidParams, `unknown prompt '${req.params.name}'`);
    });
  }

  private label(d: Downstream, name: string): string {
    return exposedName(d.name, name, d.cfg.prefix).name;
  }

  private union<T>(pick: (d: Downstream) => T[], map: (d: Downstream, item: T) => T): T[] {
    return this.downstreams.flatMap((d) => pick(d).map((item) => map(d, item)));
  }

  private resourceOwner(uri: string): Downstream | undefined {
    const exact = this.downstreams.find((d) => d.resources.some((r: Resource) => r.uri === uri));
    if (exact) return exact;
    let best: { d: Downstream; len: number } | undefined;
    for (const d of this.downstreams) {
      for (const t of d.templates as ResourceTemplate[]) {
        const literal = t.uriTemplate.split("{")[0] ?? "";
        if (literal && uri.startsWith(literal) && (!best || literal.length > best.len)) best = { d, len: literal.length };
      }
    }
    return best?.d;
  }

  /** The per-call hot path: a route lookup and the downstream request, no extra async frames. */
  private callTool(request: JSONRPCRequest, extra: Extra): Promise<CallToolResult> {
    const params = (request.params ?? {}) as { name?: unknown; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> };
    const name = params.name;
    if (typeof name !== "string") return Promise.reject(new ProxyRequestError(ErrorCode.InvalidParams, "tools/call needs params.name"));
    if (CALL_HOOKS.has(name))
      return Promise.resolve(errorResult(`${name} is asked by the bridge around each tool call; it cannot be called as a tool`));
    const route = this.getCatalog().routes.get(name);
    const buzz = !route && this.opts.buzz && isBuzzTool(name);
    if ((route || buzz) && this.toolGates.active) {
      const call: GatedCall = { tool: name, server: route ? route.ds.name : "buzz", arguments: params.arguments ?? {} };
      return this.gatedCall(call, () => this.dispatch(name, params, extra));
    }
    return this.dispatch(name, params, extra);
  }

  /** `_PreToolUse` first (a block stops the call), the call, then `_PostToolUse`'s note appended (./tool-gates.ts). */
  private async gatedCall(call: GatedCall, run: () => Promise<CallToolResult>): Promise<CallToolResult> {
    const pre = await this.toolGates.before(call);
    if (pre.verdict === "block") return errorResult(pre.text);
    const result = await run();
    const post = await this.toolGates.after(call, result);
    const content = [...(result.content ?? [])];
    if (pre.verdict === "advise") content.unshift({ type: "text", text: pre.text });
    if (post) content.push({ type: "text", text: post });
    return content.length === (result.content ?? []).length ? result : { ...result, content };
  }

  private dispatch(
    name: string,
    params: { arguments?: Record<string, unknown>; _meta?: Record<string, unknown> },
    extra: Extra,
  ): Promise<CallToolResult> {
    const route = this.getCatalog().routes.get(name);
    if (route) {
      const meta = params._meta;
      const progressToken = meta?.progressToken;
      let forwardMeta: Record<string, unknown> | undefined;
      if (meta) {
        const { progressToken: _drop, ...rest } = meta;
        if (Object.keys(rest).length > 0) forwardMeta = rest;
      }
      return route.ds.call(route.tool, params.arguments, {
        signal: extra.signal,
        meta: forwardMeta,
        onprogress:
          progressToken === undefined
            ? undefined
            : (p) =>
                void extra
                  .sendNotification({ method: "notifications/progress", params: { ...p, progressToken: progressToken as string | number } })
                  .catch(() => {}),
      });
    }
    if (this.opts.buzz && isBuzzTool(name))
      return callBuzzTool(this.opts.buzz, name, params.arguments, this.opts.manifest.message_max_bytes);
    const hookTargets = isHookName(name) ? this.hookTargets(name) : [];
    if (hookTargets.length > 0) {
      return this.fanout(name, hookTargets, params.arguments).then((r): CallToolResult => ({ content: [{ type: "text", text: r.text }] }));
    }
    return Promise.resolve(
      errorResult(`unknown tool '${name}': this proxy has no such tool (it may belong to a server that failed to start; see tools/list)`),
    );
  }
}
