/**
 * One agent session's MCP slot served by the daemon over HTTP: the session's Aggregator,
 * its downstream servers started by the daemon in the same sandbox as the agent's channel
 * (bubblewrap around each, with the agent's environment as the parent the stdio proxy would
 * have had), its built-in buzz tools calling the session's handlers directly, and the
 * agent process's endpoint bound to it with a token of its own. Hooks the daemon enforces
 * run on the aggregator directly: there is no link to cross. Attached files are read in the
 * agent's sandbox, as the stdio proxy reads them (attachment-reader.ts).
 */
import type { PrivateNetwork } from "../agent/sandbox-net.js";
import type { Logger } from "../base/log.js";
import type { HookFanout } from "../contract/hooks.js";
import { directBuzzTools, type BuzzToolHandlers } from "../link/buzz-call.js";
import { Aggregator } from "./aggregator.js";
import { sandboxedAttachmentReader } from "./attachment-reader.js";
import { DEFAULT_ATTACHMENT_MAX_BYTES } from "./attachment-files.js";
import { downstreamEnv } from "./env.js";
import type { HttpEndpoint } from "./http-endpoint.js";
import type { ProxyManifest } from "./manifest.js";

export interface HttpSlotOptions {
  endpoint: HttpEndpoint;
  /** The scope the session serves, for the log. */
  key: string;
  manifest: ProxyManifest;
  tools: BuzzToolHandlers;
  /** The agent process's environment: what a server started beside it inherits from (./env.ts). */
  env: Record<string, string>;
  /** Puts a server command into the agent's sandbox (identity when unsandboxed). */
  wrap(server: { command: string; args: string[]; cwd?: string }): {
    command: string;
    args: string[];
    cwd: string;
    network?: PrivateNetwork;
  };
  logger: Logger;
  /** Hears of every merged hook run (the daemon's /metrics). */
  hookRan?(fanout: HookFanout, hook: string): void;
}

export interface HttpSlot {
  /** For `session/new`: `{ type: "http", name: "buzz", url, headers }`. */
  url: string;
  headers: Record<string, string>;
  runHook(name: string, opts?: { servers?: string[]; args?: Record<string, unknown> }): Promise<HookFanout>;
  /** The daemon holds the servers: hooks can run whether or not the agent ever connected. */
  whenConnected(withinMs: number): Promise<boolean>;
  /** The session ended: the token is revoked, the servers stopped. */
  unregister(): void;
}

export function openHttpSlot(o: HttpSlotOptions): HttpSlot {
  // Tagged as the stdio proxy's lines are when the daemon reads them back from an agent's stderr, with this source.
  const log = o.logger.child({ scope: o.key, source: "mcp-http" });
  const aggregator = new Aggregator({
    manifest: o.manifest,
    logger: log,
    buzz: directBuzzTools(
      o.tools,
      (tool, error) => log.warn({ evt: "link.tool_failed", tool, error }),
      sandboxedAttachmentReader({ wrap: o.wrap, env: o.env, maxBytes: o.manifest.attachment_max_bytes ?? DEFAULT_ATTACHMENT_MAX_BYTES }),
    ),
    wrap: (_spec, server) => {
      const run = o.wrap({ command: server.command, args: server.args, cwd: server.cwd });
      return { ...run, env: downstreamEnv(server.env, o.env) };
    },
    hookRan: o.hookRan,
  });
  aggregator.start();
  const headers = o.endpoint.bind({ key: o.key, aggregator });
  let open = true;
  return {
    url: o.endpoint.url,
    headers,
    runHook: (name, opts) => aggregator.runHook(name, opts?.servers, opts?.args),
    whenConnected: () => Promise.resolve(open),
    unregister: () => {
      if (!open) return;
      open = false;
      o.endpoint.unbind();
      void aggregator.stop();
    },
  };
}
