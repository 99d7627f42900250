/**
 * The daemon↔proxy link's messages (JSON-RPC over a unix socket, vscode-jsonrpc).
 * The proxy opens the connection and says hello with its session token; after that
 * either side may call the other: the proxy forwards buzz tool calls, the daemon asks
 * for a merged hook run.
 */
import { NotificationType, RequestType } from "vscode-jsonrpc/node";
import type { BuzzToolName } from "../contract/buzz-tools.js";
import type { HookFanout } from "../contract/hooks.js";
import type { ProxyManifest } from "../contract/manifest.js";

export { LINK_ENV, LINK_TOKEN_ENV } from "../contract/proxy-entry.js";
export type { BuzzToolName } from "../contract/buzz-tools.js";

export interface HelloParams {
  token: string;
  pid: number;
}
export interface HelloResult {
  manifest: ProxyManifest;
}
export interface BuzzCallParams {
  tool: BuzzToolName;
  args: Record<string, unknown>;
}
export interface RunHookParams {
  name: string;
  servers?: string[];
  /** The hook's input (for `_PreToolUse`: the agent's own tool call, `{ tool, arguments, title, kind }`). */
  args?: Record<string, unknown>;
}
export interface HookRanParams {
  hook: string;
  verdict: string;
  ms: number;
}

/** proxy → daemon: authenticate and fetch the manifest. Must be the first request. */
export const Hello = new RequestType<HelloParams, HelloResult, void>("link/hello");
/** proxy → daemon: one buzz tool call; the result is the handler's return value. */
export const BuzzCall = new RequestType<BuzzCallParams, unknown, void>("link/buzzCall");
/** daemon → proxy: run the merged hook now. */
export const RunHook = new RequestType<RunHookParams, HookFanout, void>("link/runHook");
/** proxy → daemon: a merged hook ran (asked by the daemon or called by the agent), for /metrics. */
export const HookRan = new NotificationType<HookRanParams>("link/hookRan");

/** Error codes the daemon answers with (JSON-RPC server-error range). */
export const LinkErrorCode = {
  Unauthorized: -32001,
  ToolFailed: -32002,
} as const;

export class LinkError extends Error {
  override name = "LinkError";
}
