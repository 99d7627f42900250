/**
 * The built-in buzz tools the proxy lists when it has a link. They do nothing here:
 * each call goes over the link to the daemon, which holds the key, signs, publishes
 * and scopes everything to the session's channel.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { BUZZ_TOOL_NAMES, type BuzzToolName } from "../contract/buzz-tools.js";
import { contentTooLong } from "../contract/limits.js";
import type { LinkClient } from "../link/client.js";
import { errorResult } from "./call-errors.js";

/** Listed as the contract generates them from the daemon's argument schemas. */
export { BUZZ_TOOLS } from "../contract/buzz-tools.js";

const NAMES = new Set<string>(BUZZ_TOOL_NAMES);

export function isBuzzTool(name: string): name is BuzzToolName {
  return NAMES.has(name);
}

/**
 * One buzz tool call over the link. A send_message longer than the manifest's
 * `message_max_bytes` is refused here, in the daemon's words, before it crosses the link.
 */
export async function callBuzzTool(
  link: LinkClient,
  name: BuzzToolName,
  args: Record<string, unknown> | undefined,
  maxMessageBytes?: number,
): Promise<CallToolResult> {
  if (name === "send_message" && maxMessageBytes !== undefined && typeof args?.content === "string") {
    const bytes = Buffer.byteLength(args.content, "utf8");
    if (bytes > maxMessageBytes) return errorResult(`${name} failed: ${contentTooLong(bytes, maxMessageBytes)}`);
  }
  try {
    const result = await link.callBuzzTool(name, args ?? {});
    return { content: [{ type: "text", text: typeof result === "string" ? result : JSON.stringify(result) }] };
  } catch (err) {
    return errorResult(`${name} failed: ${(err as Error).message}`);
  }
}
