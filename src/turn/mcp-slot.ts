/**
 * Which way a session's one MCP slot goes (`mcp.transport`, docs/configuration.md):
 *
 *   auto   the daemon's own HTTP endpoint when the agent advertises `mcpCapabilities.http`
 *          and its process has network and an endpoint; else the stdio proxy
 *   http   the HTTP endpoint, or the session fails saying why (an agent without MCP over HTTP)
 *   stdio  the stdio proxy (`buzz-bridge mcp-proxy`, started by the agent) always
 *
 * Either way the session gets the same servers, names, hooks and built-in tools: the
 * stdio proxy reaches the daemon over the link, the HTTP slot lives in the daemon.
 */
import type { McpSlot, McpSlotContext } from "../agent/index.js";
import type { Logger } from "../base/log.js";
import type { HookFanout } from "../contract/hooks.js";
import type { ProxyManifest } from "../contract/manifest.js";
import type { BuzzToolHandlers, LinkServer } from "../link/index.js";
import { HttpEndpoint } from "../proxy/http-endpoint.js";

/**
 * The HTTP slot's half of the proxy (the aggregator, its downstream servers' client, the
 * pass-through: the MCP SDK's types among them) loads with the first HTTP slot, not with the
 * daemon: an idle daemon does not hold it (bench figure 7).
 */
let httpSessionModule: Promise<typeof import("../proxy/http-session.js")> | undefined;
const loadHttpSession = () => (httpSessionModule ??= import("../proxy/http-session.js"));

export type McpTransport = "auto" | "stdio" | "http";

/** What the turn needs of the slot, whichever transport serves it (a LinkSession is one). */
export interface SlotSession {
  runHook(name: string, opts?: { servers?: string[]; args?: Record<string, unknown> }): Promise<HookFanout>;
  whenConnected(withinMs: number): Promise<boolean>;
  unregister(): void;
}

/** `mcp.transport: http` and this session cannot have it. */
export class McpTransportError extends Error {
  override name = "McpTransportError";
}

/** The transport for this session, or why `http` cannot be had. */
export function chooseTransport(setting: McpTransport, ctx: McpSlotContext): "stdio" | "http" {
  if (setting === "stdio") return "stdio";
  const usable = ctx.agentHttp && !ctx.offline && ctx.endpoint instanceof HttpEndpoint;
  if (setting === "auto") return usable ? "http" : "stdio";
  if (usable) return "http";
  const why = !ctx.agentHttp
    ? "the agent does not advertise mcpCapabilities.http at initialize"
    : ctx.offline
      ? "its sandbox has no network (agent.network: off), so nothing on loopback reaches it"
      : "no loopback endpoint could be reserved for its process (see the agent.endpoint_failed log line)";
  throw new McpTransportError(`mcp.transport is http but ${why}: set mcp.transport: auto (or stdio) to use the stdio proxy`);
}

export interface OpenSlotOptions {
  transport: McpTransport;
  key: string;
  manifest: ProxyManifest;
  tools: BuzzToolHandlers;
  link: Pick<LinkServer, "register" | "hookRan">;
  logger: Logger;
}

/** Opens the session's slot on its process: what `session/new` gets, and the slot the turn uses. */
export async function openSlot(o: OpenSlotOptions, ctx: McpSlotContext): Promise<{ slot: McpSlot; session: SlotSession }> {
  if (chooseTransport(o.transport, ctx) === "http") {
    const { openHttpSlot } = await loadHttpSession();
    const http = openHttpSlot({
      endpoint: ctx.endpoint as HttpEndpoint,
      key: o.key,
      manifest: o.manifest,
      tools: o.tools,
      env: ctx.env,
      wrap: ctx.wrap,
      logger: o.logger,
      hookRan: (r, hook) => o.link.hookRan({ hook, verdict: r.verdict, ms: r.ms }),
    });
    return { slot: { transport: "http", url: http.url, headers: http.headers }, session: http };
  }
  const link = o.link.register({ sessionKey: o.key, manifest: o.manifest, tools: o.tools });
  try {
    // The session's own socket, in its process's link directory (all a sandboxed agent sees of the state directory).
    const env = ctx.linkDir ? await link.listen(ctx.linkDir) : link.env;
    return { slot: { transport: "stdio", env }, session: link };
  } catch (err) {
    link.unregister();
    throw err;
  }
}
