/**
 * The built-in buzz tools the aggregator lists when it has somewhere to send them. They do
 * nothing here: each call goes to the daemon (over the link from the stdio proxy, directly
 * from the daemon's HTTP endpoint), which holds the key, signs, publishes and scopes
 * everything to the session's channel.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { BUZZ_TOOL_NAMES, type BuzzToolName } from "../contract/buzz-tools.js";
import { errorResult } from "./call-errors.js";

/** Where a built-in tool call goes: the link client, or the daemon's own handlers. Errors carry the message the agent reads. */
export interface BuzzToolPort {
  callBuzzTool(tool: BuzzToolName, args: Record<string, unknown>): Promise<unknown>;
}

/** Listed as the contract generates them from the daemon's argument schemas. */
export { BUZZ_TOOLS } from "../contract/buzz-tools.js";

const NAMES = new Set<string>(BUZZ_TOOL_NAMES);

export function isBuzzTool(name: string): name is BuzzToolName {
  return NAMES.has(name);
}

export async function callBuzzTool(
  port: BuzzToolPort,
  name: BuzzToolName,
  args: Record<string, unknown> | undefined,
): Promise<CallToolResult> {
  try {
    const result = await port.callBuzzTool(name, args ?? {});
    return { content: [{ type: "text", text: typeof result === "string" ? result : JSON.stringify(result) }] };
  } catch (err) {
    return errorResult(`${name} failed: ${(err as Error).message}`);
  }
}
