/**
 * The built-in buzz tools the aggregator lists when it has somewhere to send them. They do
 * nothing here: each call goes to the daemon (over the link from the stdio proxy, directly
 * from the daemon's HTTP endpoint), which holds the key, signs, publishes and scopes
 * everything to the session's channel.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { BUZZ_TOOL_NAMES, type BuzzToolName } from "../contract/buzz-tool-schemas.js";
import { contentTooLong } from "../contract/limits.js";
import { readAttachments } from "./attachment-files.js";
import { errorResult } from "./call-errors.js";

/** Where a built-in tool call goes: the link client, or the daemon's own handlers. Errors carry the message the agent reads. */
export interface BuzzToolPort {
  callBuzzTool(tool: BuzzToolName, args: Record<string, unknown>): Promise<unknown>;
}

/** Listed as the contract generates them from the daemon's argument schemas. */
export { BUZZ_TOOLS } from "../contract/buzz-tool-schemas.js";

const NAMES = new Set<string>(BUZZ_TOOL_NAMES);

export function isBuzzTool(name: string): name is BuzzToolName {
  return NAMES.has(name);
}

/**
 * One buzz tool call over the link. A send_message longer than the manifest's
 * `message_max_bytes` is refused here, in the daemon's words, before it crosses the link.
 */
export async function callBuzzTool(
  port: BuzzToolPort,
  name: BuzzToolName,
  args: Record<string, unknown> | undefined,
  maxMessageBytes?: number,
): Promise<CallToolResult> {
  if (name === "send_message" && maxMessageBytes !== undefined && typeof args?.content === "string") {
    const bytes = Buffer.byteLength(args.content, "utf8");
    if (bytes > maxMessageBytes) return errorResult(`${name} failed: ${contentTooLong(bytes, maxMessageBytes)}`);
  }
  try {
    const result = await port.callBuzzTool(name, args ?? {});
    return { content: [{ type: "text", text: typeof result === "string" ? result : JSON.stringify(result) }] };
  } catch (err) {
    return errorResult(`${name} failed: ${(err as Error).message}`);
  }
}

/**
 * The stdio proxy's way to the daemon: send_message's attached files are read here, where
 * the agent's files are, and cross the link as bytes (`files`).
 */
export function fileReadingPort(port: BuzzToolPort, maxBytes: number | undefined): BuzzToolPort {
  return {
    callBuzzTool: async (tool, args) => port.callBuzzTool(tool, tool === "send_message" ? await readAttachments(args, maxBytes) : args),
  };
}
