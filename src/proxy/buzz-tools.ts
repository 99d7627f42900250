/**
 * The built-in buzz tools the proxy lists when it has a link. They do nothing here:
 * each call goes over the link to the daemon, which holds the key, signs, publishes
 * and scopes everything to the session's channel.
 */
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import type { LinkClient } from "../link/client.js";
import { BUZZ_TOOL_NAMES, type BuzzToolName } from "../link/protocol.js";
import { errorResult } from "./call-errors.js";

const hex64 = { type: "string", pattern: "^[0-9a-f]{64}$" } as const;

export const BUZZ_TOOLS: Tool[] = [
  {
    name: "send_message",
    description:
      "Post a message to this session's Buzz channel. By default it replies in the thread you were mentioned in; reply_to (an event id) picks another message of this channel to reply to. mentions: pubkeys (hex) to notify.",
    inputSchema: {
      type: "object",
      properties: {
        content: { type: "string", description: "message text (markdown)" },
        reply_to: { ...hex64, description: "event id to reply to (same channel)" },
        mentions: { type: "array", items: hex64, description: "hex pubkeys to mention" },
      },
      required: ["content"],
    },
  },
  {
    name: "add_reaction",
    description: "React to a message of this channel with an emoji.",
    inputSchema: {
      type: "object",
      properties: { event_id: { ...hex64, description: "event id to react to" }, emoji: { type: "string", description: "e.g. 👍" } },
      required: ["event_id", "emoji"],
    },
  },
  {
    name: "get_messages",
    description: "Recent messages of this channel, newest first.",
    inputSchema: { type: "object", properties: { limit: { type: "integer", minimum: 1, maximum: 100, description: "default 20" } } },
  },
  {
    name: "get_thread",
    description: "A message of this channel and its thread replies.",
    inputSchema: { type: "object", properties: { event_id: { ...hex64, description: "any event id in the thread" } }, required: ["event_id"] },
  },
  {
    name: "get_channel",
    description: "This channel's id, name, description and members.",
    inputSchema: { type: "object", properties: {} },
  },
];

const NAMES = new Set<string>(BUZZ_TOOL_NAMES);

export function isBuzzTool(name: string): name is BuzzToolName {
  return NAMES.has(name);
}

export async function callBuzzTool(link: LinkClient, name: BuzzToolName, args: Record<string, unknown> | undefined): Promise<CallToolResult> {
  try {
    const result = await link.callBuzzTool(name, args ?? {});
    return { content: [{ type: "text", text: typeof result === "string" ? result : JSON.stringify(result) }] };
  } catch (err) {
    return errorResult(`${name} failed: ${(err as Error).message}`);
  }
}
