/**
 * The daemon↔proxy link's messages (JSON-RPC over a unix socket, vscode-jsonrpc).
 * The proxy opens the connection and says hello with its session token; after that
 * either side may call the other: the proxy forwards buzz tool calls, the daemon asks
 * for a merged hook run.
 */
import { RequestType } from "vscode-jsonrpc/node";
import type { ProxyManifest } from "../proxy/manifest.js";
import type { HookFanout } from "../proxy/hooks.js";

export type { ProxyManifest } from "../proxy/manifest.js";
export type { HookFanout, HookServerResult, Verdict } from "../proxy/hooks.js";

/** Env var with the link's unix socket path, set by the daemon on the proxy entry. */
export const LINK_ENV = "BUZZ_BRIDGE_LINK";
/** Env var with the session's capability token. */
export const LINK_TOKEN_ENV = "BUZZ_BRIDGE_LINK_TOKEN";

/** The built-in buzz tools, by the names the agent sees. */
export const BUZZ_TOOL_NAMES = ["send_message", "add_reaction", "get_messages", "get_thread", "get_channel"] as const;
export type BuzzToolName = (typeof BUZZ_TOOL_NAMES)[number];

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
}

/** proxy → daemon: authenticate and fetch the manifest. Must be the first request. */
export const Hello = new RequestType<HelloParams, HelloResult, void>("link/hello");
/** proxy → daemon: one buzz tool call; the result is the handler's return value. */
export const BuzzCall = new RequestType<BuzzCallParams, unknown, void>("link/buzzCall");
/** daemon → proxy: run the merged hook now. */
export const RunHook = new RequestType<RunHookParams, HookFanout, void>("link/runHook");

/** Error codes the daemon answers with (JSON-RPC server-error range). */
export const LinkErrorCode = {
  Unauthorized: -32001,
  ToolFailed: -32002,
} as const;

export class LinkError extends Error {
  override name = "LinkError";
}
