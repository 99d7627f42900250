/**
 * The built-in buzz tools as both sides of the link see them: their names, the zod schemas
 * the daemon validates their arguments with (link/server.ts), and the JSON Schemas the proxy
 * lists to the agent (proxy/buzz-tool-listing.ts), generated from those same zod schemas so the
 * agent is shown what the daemon accepts. Part of the daemon↔proxy contract.
 *
 * Two limits of JSON Schema, both on the lenient side (the daemon refuses these with a
 * message saying what is wrong): a pattern cannot check an npub's bech32 checksum, and
 * "event_id or its alias event" needs a top-level anyOf, which Anthropic's API refuses in a
 * tool's input schema; so the listing shows both as optional.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { parsePubkey } from "../config/keys.js";
import { MENTION_CAP } from "./limits.js";

/** The built-in buzz tools, by the names the agent sees. */
export const BUZZ_TOOL_NAMES = ["send_message", "add_reaction", "get_messages", "get_thread", "get_channel"] as const;
export type BuzzToolName = (typeof BUZZ_TOOL_NAMES)[number];

/** Default page size of get_messages. */
export const DEFAULT_MESSAGE_LIMIT = 20;

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, { message: "expected a 64-character lowercase hex event id / pubkey" });

/** People write npub1… as often as hex; the wire wants hex. bech32's alphabet lacks 1, b, i, o. */
const pubkeyArg = z
  .string()
  .regex(/^(?:[0-9a-f]{64}|npub1[02-9ac-hj-np-z]{58})$/, { message: "expected a 64-character lowercase hex pubkey or an npub1…" })
  .transform((v, ctx) => {
    try {
      return parsePubkey(v);
    } catch (err) {
      ctx.issues.push({ code: "custom", message: (err as Error).message, input: v });
      return z.NEVER;
    }
  });

/**
 * The argument is `event_id`; `event`, an earlier spelling of it, is accepted as its alias.
 * One of the two is required.
 */
const eventId = (what: string) => ({ event_id: hex64.optional().describe(what), event: hex64.optional().describe("alias of event_id") });
const hasEvent = (a: { event_id?: string; event?: string }) => a.event_id !== undefined || a.event !== undefined;
const needEvent = { message: "event_id is required", path: ["event_id"] };

/** Files one reply may carry. */
export const MAX_REPLY_ATTACHMENTS = 8;

const fileMeta = {
  name: z.string().min(1).max(200).optional().describe("file name shown to people; default the path's last part"),
  mime: z
    .string()
    .regex(/^[\w.+-]+\/[\w.+-]+$/, { message: "expected a type such as image/png" })
    .optional()
    .describe("its type, e.g. image/png; default from the file name"),
  alt: z.string().max(500).optional().describe("a short description of the file"),
};

const sendMessageBase = {
  content: z.string().min(1, { message: "content is required" }).describe("message text (markdown)"),
  reply_to: hex64.optional().describe("event id to reply to (same channel)"),
  mentions: z.array(pubkeyArg).max(MENTION_CAP).optional().describe(`pubkeys (hex or npub) to mention, at most ${MENTION_CAP}`),
  progress: z
    .boolean()
    .optional()
    .describe("true: a progress note while you keep working (e.g. 'Looking into it…'); it is not your answer, which you still send"),
};

/** What the daemon accepts for each tool, and (as JSON Schema) what the agent is shown. */
export const BUZZ_TOOL_ARGS = {
  send_message: z.object({
    ...sendMessageBase,
    attachments: z
      .array(z.object({ path: z.string().min(1).describe("the file, relative to your working directory"), ...fileMeta }))
      .max(MAX_REPLY_ATTACHMENTS)
      .optional()
      .describe(`files to attach (uploaded to the relay's media store; at most ${MAX_REPLY_ATTACHMENTS})`),
  }),
  add_reaction: z
    .object({ ...eventId("event id to react to"), emoji: z.string().min(1).max(64).describe("e.g. 👍") })
    .refine(hasEvent, needEvent)
    .transform(({ event_id, event, emoji }) => ({ event_id: (event_id ?? event) as string, emoji })),
  get_messages: z.object({ limit: z.number().int().min(1).max(100).optional().describe(`default ${DEFAULT_MESSAGE_LIMIT}`) }),
  get_thread: z
    .object(eventId("any event id in the thread"))
    .refine(hasEvent, needEvent)
    .transform(({ event_id, event }) => ({ event_id: (event_id ?? event) as string })),
  get_channel: z.object({}),
} satisfies Record<BuzzToolName, z.ZodType>;

/**
 * The tools' arguments as they cross the link: the proxy, which runs where the agent's files
 * are, reads each attached file and sends its bytes (`files`, base64) instead of its path;
 * the daemon never opens a path an agent names.
 */
export const BUZZ_LINK_ARGS = {
  ...BUZZ_TOOL_ARGS,
  send_message: z.object({
    ...sendMessageBase,
    files: z
      .array(
        z.object({
          name: z.string().min(1).max(200),
          mime: fileMeta.mime.unwrap(),
          alt: fileMeta.alt,
          data: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, { message: "expected base64" }),
        }),
      )
      .max(MAX_REPLY_ATTACHMENTS)
      .optional(),
  }),
} satisfies Record<BuzzToolName, z.ZodType>;

export type BuzzToolArgs = { [K in BuzzToolName]: z.output<(typeof BUZZ_LINK_ARGS)[K]> };

const DESCRIPTIONS: Record<BuzzToolName, string> = {
  send_message:
    "Post a message to this session's Buzz channel. By default it replies in the thread you were mentioned in; reply_to (an event id) picks another message of this channel to reply to. mentions: pubkeys to notify. attachments: files from your working directory to attach (screenshots, logs, patches). A message without progress is your answer to the mention. To say how far you are while you keep working, set progress: true: such a note is not taken as your answer, so if your work is interrupted the mention is taken up again and you still owe the answer.",
  add_reaction: "React to a message of this channel with an emoji.",
  get_messages: "Recent messages of this channel, newest first.",
  get_thread: "A message of this channel and its thread replies.",
  get_channel: "This channel's id, name, description and members.",
};

/** The JSON Schema of a tool's arguments as the agent is shown it: the input side of its zod schema. */
function buzzToolInputSchema(name: BuzzToolName): Tool["inputSchema"] {
  const { $schema: _, ...schema } = z.toJSONSchema(BUZZ_TOOL_ARGS[name], { io: "input" });
  return schema as Tool["inputSchema"];
}

/** The built-in tools as the proxy lists them. */
export const BUZZ_TOOLS: Tool[] = BUZZ_TOOL_NAMES.map((name) => ({
  name,
  description: DESCRIPTIONS[name],
  inputSchema: buzzToolInputSchema(name),
}));
