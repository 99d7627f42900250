/**
 * One downstream MCP server of the proxy: spawned with its own env, initialized,
 * listed (tools, resources, templates, prompts), restarted with backoff when it
 * crashes or misses two hook deadlines in a row. While it is down its last known tool
 * list is kept, so calls to it fail fast with a clear message instead of "unknown tool".
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  ErrorCode,
  McpError,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Prompt,
  type Resource,
  type ResourceTemplate,
  type ServerCapabilities,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { Logger } from "../base/log.js";
import { downstreamEnv } from "./env.js";
import { FastStdioClientTransport, type ChildSpec } from "./line-transport.js";
import type { ManifestServer } from "./manifest.js";
import { DEFAULT_CALL_TIMEOUT_MS } from "../contract/manifest.js";
import { errorResult, exitedDuring, refused, timedOut } from "./call-errors.js";
import { RawCalls } from "./pass-through.js";
import { PROXY_VERSION } from "./version.js";
import { Backoff } from "../base/backoff.js";

/**
 * The SDK's client (with its JSON-schema validator, ajv) loads with the first downstream
 * server, not with the daemon: a daemon whose sessions never start one never holds it
 * (bench figure 7).
 */
let clientModule: Promise<typeof import("@modelcontextprotocol/sdk/client/index.js")> | undefined;
const loadClient = () => (clientModule ??= import("@modelcontextprotocol/sdk/client/index.js"));

export type DownstreamState = "starting" | "ready" | "down" | "stopped";

/** Restart pacing after a server goes down: 500 ms doubling to 30 s, no jitter (one proxy, no herd). */
const RESTART_BACKOFF = { baseMs: 500, capMs: 30_000, jitter: 0 };
/**
 * A server gets at least this long to initialize and list. list_timeout only bounds how
 * long the agent's first tools/list waits; a slower server still joins (list_changed).
 */
const MIN_START_TIMEOUT_MS = 30_000;
/** Up this long, a server's crash count starts over. */
const STABLE_AFTER_MS = 30_000;

/**
 * Results are handed upstream as received; the agent's own client validates them.
 * A full CallToolResult parse here (and again in the upstream Server) was a large
 * share of the per-call cost.
 */
const PassThroughResult = z.custom<CallToolResult>((v) => typeof v === "object" && v !== null && !Array.isArray(v));

/**
 * Runs a server some other way than as itself: given the proxy's own spawn (the server's
 * command, a cleaned environment, its cwd) and the server's manifest entry, the spawn to use.
 */
export type DownstreamWrap = (spec: ChildSpec, server: ManifestServer) => ChildSpec;

export interface DownstreamEvents {
  /** A list the proxy aggregates changed (after a list_changed or a restart). */
  changed(kind: "tools" | "resources" | "prompts"): void;
}

export class Downstream {
  state: DownstreamState = "starting";
  tools: Tool[] = [];
  resources: Resource[] = [];
  templates: ResourceTemplate[] = [];
  prompts: Prompt[] = [];
  capabilities: ServerCapabilities = {};
  lastError?: string;
  /** The tail of the server's stderr when it last failed to start (doctor shows it). */
  lastFailureStderr?: string;
  /** Consecutive hook deadline misses; two restart the server. */
  hookMisses = 0;
  private client?: Client;
  private transport?: FastStdioClientTransport;
  private raw?: RawCalls;
  private readonly restarts = new Backoff(RESTART_BACKOFF);
  private readyAt = 0;
  private restartTimer?: NodeJS.Timeout;
  private generation = 0;
  private firstAttempt: Promise<void>;
  private resolveFirst!: () => void;
  private readyWaiters: (() => void)[] = [];

  constructor(
    readonly cfg: ManifestServer,
    private readonly opts: {
      logger: Logger;
      listTimeoutMs: number;
      events: DownstreamEvents;
      /** Runs the server some other way (doctor and the daemon's HTTP slot: inside the agent sandbox). */
      wrap?: DownstreamWrap;
    },
  ) {
    this.firstAttempt = new Promise((r) => (this.resolveFirst = r));
  }

  get name(): string {
    return this.cfg.name;
  }

  /** How long one tool call may go without an answer or progress: the server's timeout, or the default. */
  get callTimeoutMs(): number {
    return this.cfg.timeout ?? DEFAULT_CALL_TIMEOUT_MS;
  }

  /** Resolves once the first start attempt has finished, ready or failed. */
  settled(): Promise<void> {
    return this.firstAttempt;
  }

  /** Resolves when the server is ready (now or after a restart). */
  whenReady(): Promise<void> {
    if (this.state === "ready") return Promise.resolve();
    return new Promise((r) => this.readyWaiters.push(r));
  }

  start(): Promise<void> {
    void this.launch();
    return this.firstAttempt;
  }

  private async launch(): Promise<void> {
    const gen = ++this.generation;
    this.state = "starting";
    const { Client } = await loadClient();
    if (gen !== this.generation || (this.state as DownstreamState) === "stopped") return;
    const log = this.opts.logger;
    let spec: ChildSpec = { command: this.cfg.command, args: this.cfg.args, env: downstreamEnv(this.cfg.env), cwd: this.cfg.cwd };
    try {
      if (this.opts.wrap) spec = this.opts.wrap(spec, this.cfg);
    } catch (err) {
      // A launch that cannot be built (a sandbox that cannot run) fails like a start.
      this.startFailed((err as Error).message, "");
      return;
    }
    const transport = new FastStdioClientTransport(spec);
    const client = new Client({ name: "buzz-bridge-proxy", version: PROXY_VERSION }, { capabilities: {} });
    // A server printing garbage on stdout would otherwise flood the log: first few, then every 100th.
    let errors = 0;
    client.onerror = (err) => {
      errors++;
      if (errors <= 5 || errors % 100 === 0) log.warn({ evt: "proxy.server_error", server: this.name, error: err.message, count: errors });
    };
    const raw = new RawCalls(transport, this.name, this.callTimeoutMs);
    transport.intercept = (message) => raw.take(message);
    client.onclose = () => {
      raw.closed();
      if (gen !== this.generation || this.state === "stopped") return;
      this.onDown(`exited${transport.stderr.toString() ? `; stderr: ${transport.stderr.toString().slice(-500)}` : ""}`);
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.refresh(client, gen, "tools"));
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () => this.refresh(client, gen, "resources"));
    client.setNotificationHandler(PromptListChangedNotificationSchema, () => this.refresh(client, gen, "prompts"));
    this.client = client;
    this.transport = transport;
    this.raw = raw;
    const started = Date.now();
    try {
      await client.connect(transport, { timeout: Math.max(this.opts.listTimeoutMs, MIN_START_TIMEOUT_MS) });
      this.capabilities = client.getServerCapabilities() ?? {};
      await this.listAll(client);
    } catch (err) {
      if (gen !== this.generation || (this.state as DownstreamState) === "stopped") return;
      void transport.close(true);
      this.startFailed(err instanceof Error ? err.message : String(err), transport.stderr.toString().slice(-2000));
      return;
    }
    if (gen !== this.generation || (this.state as DownstreamState) === "stopped") return;
    const restarted = this.readyAt !== 0;
    this.state = "ready";
    this.readyAt = Date.now();
    this.lastError = undefined;
    log.info({
      evt: restarted ? "proxy.server_restarted" : "proxy.server_ready",
      server: this.name,
      tools: this.tools.length,
      ms: Date.now() - started,
    });
    this.resolveFirst();
    for (const w of this.readyWaiters.splice(0)) w();
    // Also after a first start that finished past list_timeout: its tools join the union late.
    for (const kind of ["tools", "resources", "prompts"] as const) this.opts.events.changed(kind);
  }

  private startFailed(error: string, stderr: string): void {
    this.opts.logger.error({ evt: "proxy.server_failed", server: this.name, command: this.cfg.command, error, stderr });
    this.lastError = error;
    this.lastFailureStderr = stderr;
    this.state = "down";
    this.resolveFirst();
    this.scheduleRestart();
  }

  private async listAll(client: Client): Promise<void> {
    const opts = { timeout: Math.max(this.opts.listTimeoutMs, MIN_START_TIMEOUT_MS) };
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, opts);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    this.tools = tools;
    // Resources and prompts are extras: a server that fails them still serves its tools.
    const caps = this.capabilities;
    const extra = async <T>(what: string, fn: () => Promise<T>, fallback: T): Promise<T> => {
      try {
        return await fn();
      } catch (err) {
        this.opts.logger.warn({ evt: "proxy.list_failed", server: this.name, what, error: (err as Error).message });
        return fallback;
      }
    };
    if (caps.resources) {
      this.resources = await extra("resources", async () => (await client.listResources(undefined, opts)).resources, []);
      this.templates = await extra(
        "resource templates",
        async () => (await client.listResourceTemplates(undefined, opts)).resourceTemplates,
        [],
      );
    }
    if (caps.prompts) this.prompts = await extra("prompts", async () => (await client.listPrompts(undefined, opts)).prompts, []);
  }

  private async refresh(client: Client, gen: number, kind: "tools" | "resources" | "prompts"): Promise<void> {
    if (gen !== this.generation || this.state !== "ready") return;
    const opts = { timeout: this.opts.listTimeoutMs };
    try {
      if (kind === "tools") this.tools = (await client.listTools(undefined, opts)).tools;
      else if (kind === "resources") {
        this.resources = (await client.listResources(undefined, opts)).resources;
        this.templates = (await client.listResourceTemplates(undefined, opts)).resourceTemplates;
      } else this.prompts = (await client.listPrompts(undefined, opts)).prompts;
      this.opts.events.changed(kind);
    } catch (err) {
      this.opts.logger.warn({ evt: "proxy.list_failed", server: this.name, what: kind, error: (err as Error).message });
    }
  }

  private onDown(reason: string): void {
    this.state = "down";
    this.lastError = reason;
    this.opts.logger.error({ evt: "proxy.server_down", server: this.name, reason });
    this.scheduleRestart();
  }

  private scheduleRestart(): void {
    if (this.readyAt && Date.now() - this.readyAt > STABLE_AFTER_MS) this.restarts.reset();
    const delay = this.restarts.next();
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => void this.launch(), delay);
    this.restartTimer.unref();
  }

  /** Kills and relaunches now (two missed hook deadlines). */
  async restart(reason: string): Promise<void> {
    if (this.state === "stopped") return;
    this.opts.logger.warn({ evt: "proxy.server_restart", server: this.name, reason });
    clearTimeout(this.restartTimer);
    this.generation++;
    this.state = "down";
    this.lastError = reason;
    const old = this.transport;
    void old?.close(true);
    void this.launch();
  }

  async stop(): Promise<void> {
    this.state = "stopped";
    clearTimeout(this.restartTimer);
    await this.transport?.close();
  }

  /** The pass-through for tools/call while the server is ready; undefined otherwise. */
  rawCalls(): RawCalls | undefined {
    return this.state === "ready" ? this.raw : undefined;
  }

  /**
   * Calls a tool; every failure becomes an isError result except the caller's own
   * cancellation. Not async on purpose: this is the per-call hot path, and each async
   * frame costs a promise and a microtask.
   */
  call(
    tool: string,
    args: Record<string, unknown> | undefined,
    options: RequestOptions & { meta?: Record<string, unknown> },
  ): Promise<CallToolResult> {
    const client = this.client;
    if (this.state !== "ready" || !client) {
      return Promise.resolve(
        errorResult(
          `MCP server '${this.name}' is ${this.state === "starting" ? "starting" : "down"}${this.lastError ? ` (${this.lastError.slice(0, 300)})` : ""}; try again shortly`,
        ),
      );
    }
    const params: { name: string; arguments: Record<string, unknown>; _meta?: Record<string, unknown> } = {
      name: tool,
      arguments: args ?? {},
    };
    if (options.meta) params._meta = options.meta;
    return client
      .request({ method: "tools/call", params }, PassThroughResult, {
        signal: options.signal,
        onprogress: options.onprogress,
        timeout: this.callTimeoutMs,
        resetTimeoutOnProgress: true,
      })
      .catch((err: unknown) => this.callFailed(err, tool, options.signal));
  }

  private callFailed(err: unknown, tool: string, signal: AbortSignal | undefined): CallToolResult {
    if (signal?.aborted) throw err;
    if (err instanceof McpError) {
      // Our own timer's error, not a server's error that happens to use the same code (-32001).
      const ours = err.code === ErrorCode.RequestTimeout && (err.data as { timeout?: unknown } | undefined)?.timeout !== undefined;
      if (ours) return timedOut(this.name, tool, this.callTimeoutMs);
      if (err.code === ErrorCode.ConnectionClosed) return exitedDuring(this.name, tool);
      return refused(this.name, tool, err);
    }
    return errorResult(`'${tool}' on MCP server '${this.name}' failed: ${(err as Error).message}`);
  }

  /** Raw request for resources and prompts, which keep protocol errors as they are. */
  request<T extends z.ZodType>(
    method: string,
    params: Record<string, unknown>,
    schema: T,
    options: RequestOptions = {},
  ): Promise<z.output<T>> {
    if (this.state !== "ready" || !this.client) {
      return Promise.reject(
        new McpError(
          ErrorCode.InternalError,
          `MCP server '${this.name}' is ${this.state}${this.lastError ? ` (${this.lastError.slice(0, 300)})` : ""}`,
        ),
      );
    }
    return this.client.request({ method, params }, schema, { timeout: this.opts.listTimeoutMs, ...options }) as Promise<z.output<T>>;
  }
}
