/**
 * The daemon↔proxy link's messages, over a unix socket: JSON-RPC as MCP frames it (one
 * message a line, base/line-transport.ts), run on both ends by the MCP SDK's Protocol
 * (peer.ts, which the daemon loads with its first link connection).
 * The proxy opens the connection and says hello with its session token; after that
 * either side may call the other: the proxy forwards buzz tool calls, the daemon asks
 * for a merged hook run.
 *
 * What the daemon receives is read as unknown fields and checked by its handlers: the
 * proxy is the agent's to run. What the proxy receives comes from the daemon that gave
 * it its token (the manifest is still checked, contract/manifest.ts).
 */
import { z } from "zod";
import type { BuzzToolName } from "../contract/buzz-tool-schemas.js";
import type { HookFanout } from "../contract/hooks.js";

export { LINK_ENV, LINK_TOKEN_ENV } from "../contract/proxy-entry.js";
export type { BuzzToolName } from "../contract/buzz-tool-schemas.js";

// Types, not interfaces: the SDK's Request takes params as an object with an index signature.
export type HelloParams = {
  token: string;
  pid: number;
};
export type BuzzCallParams = {
  tool: BuzzToolName;
  args: Record<string, unknown>;
};
export type RunHookParams = {
  name: string;
  servers?: string[];
  /** The hook's input (for `_PreToolUse`: the agent's own tool call, `{ tool, arguments, title, kind }`). */
  args?: Record<string, unknown>;
};
export type HookRanParams = {
  hook: string;
  verdict: string;
  ms: number;
};

const isObject = (v: unknown): boolean => typeof v === "object" && v !== null;

/** proxy → daemon: authenticate and fetch the manifest (HelloResult). Must be the first request. */
export const Hello = z.object({
  method: z.literal("link/hello"),
  params: z.object({ token: z.unknown(), pid: z.unknown() }).optional(),
});
export const HelloResult = z.object({ manifest: z.unknown() });

/** proxy → daemon: one buzz tool call (BuzzCallParams). */
export const BuzzCall = z.object({
  method: z.literal("link/buzzCall"),
  params: z.object({ tool: z.unknown(), args: z.unknown() }).optional(),
});
/** The handler's return value as `value`: a JSON-RPC result is an object in MCP, and get_messages answers a list. */
export const BuzzCallResult = z.object({ value: z.unknown() });

/** daemon → proxy: run the merged hook now (RunHookParams); the answer is its HookFanout. */
export const RunHook = z.object({ method: z.literal("link/runHook"), params: z.custom<RunHookParams>(isObject) });
export const RunHookResult = z.custom<HookFanout>(isObject);

/** proxy → daemon: a merged hook ran (asked by the daemon or called by the agent), for /metrics (HookRanParams). */
export const HookRan = z.object({
  method: z.literal("link/hookRan"),
  params: z.object({ hook: z.unknown(), verdict: z.unknown(), ms: z.unknown() }).optional(),
});

/**
 * Error codes the daemon answers with: in JSON-RPC's server-error range, clear of the codes
 * the MCP SDK gives its own errors (-32000 connection closed, -32001 request timed out).
 */
export const LinkErrorCode = {
  Unauthorized: -32011,
  ToolFailed: -32012,
} as const;

/** `code`: when thrown by a request handler, the JSON-RPC error code the other end gets, with the message as is. */
export class LinkError extends Error {
  override name = "LinkError";
  constructor(
    message: string,
    readonly code?: number,
  ) {
    super(message);
  }
}

/**
 * A buzz tool call waits as long as its handler works (a relay that is away is waited
 * for until the turn is over): the largest delay a Node timer takes, about 24 days.
 */
export const NO_LINK_TIMEOUT_MS = 2 ** 31 - 1;
