/**
 * The only way text enters a prompt (docs/security.md): a prompt block is made of
 * `PromptText`, and only this file makes it — from the bridge's own words (the literal
 * parts of a `p` template), from text the operator configured (`operatorText`), from values
 * whose shape was checked (`hexId`, `npubText`, `timeText`, numbers), and from anything a
 * channel member wrote (message content, names, channel names and descriptions, profile
 * fields, tag values) only inside a fence: `fence` for a block, `inline` for a one-line
 * value. Member text passed anywhere else does not type-check.
 */
import { npub } from "../config/keys.js";

declare const promptText: unique symbol;
/** Text that may stand in a prompt as it is; made only by the functions of this file. */
export type PromptText = string & { readonly [promptText]: true };

const made = (text: string) => text as PromptText;

/** The ACP ContentBlock text shape (`{type: "text", text}`); one per prompt section. */
export interface TextBlock {
  type: "text";
  text: string;
}

export const block = (text: PromptText): TextBlock => ({ type: "text", text });

/**
 * The bridge's own words: the template's literal parts are source code; every value put
 * into it is PromptText already or a number.
 */
export function p(strings: TemplateStringsArray, ...values: Array<PromptText | number>): PromptText {
  let out = strings[0]!;
  values.forEach((v, i) => {
    out += String(v) + strings[i + 1]!;
  });
  return made(out);
}

/** Prompt texts joined by `sep` (a line break unless said otherwise). */
export function joined(parts: readonly PromptText[], sep: "\n" | "\n\n" | ", " = "\n"): PromptText {
  return made(parts.join(sep));
}

/**
 * Text the operator wrote in the configuration (agent persona, team instructions, the
 * heartbeat's prompt): trusted like the bridge's own words. Never for anything read from
 * the relay.
 */
export function operatorText(text: string): PromptText {
  return made(text);
}

/** An ACP image block: base64 data and its type (sent when the agent advertises promptCapabilities.image). */
export interface ImageBlock {
  type: "image";
  data: string;
  mimeType: string;
  uri?: string;
}

/** An ACP embedded text resource (sent when the agent advertises promptCapabilities.embeddedContext). */
export interface ResourceBlock {
  type: "resource";
  resource: { uri: string; mimeType?: string; text: string };
}

/** What a prompt is made of: text sections, and the attachments given to the agent as files. */
export type PromptBlock = TextBlock | ImageBlock | ResourceBlock;

/**
 * Fences untrusted text in a backtick fence longer than any backtick run inside it, so
 * the text cannot close the fence and continue as if it were the bridge speaking.
 */
export function fence(text: string, label: "untrusted" = "untrusted"): PromptText {
  let longest = 0;
  for (const m of text.matchAll(/`+/g)) longest = Math.max(longest, m[0].length);
  const f = "`".repeat(Math.max(3, longest + 1));
  return made(`${f}${label}\n${text}\n${f}`);
}

/**
 * A short untrusted value (a name, a channel's name or description) inside a header line:
 * control characters and line breaks collapse to spaces so it cannot begin a line of its
 * own, it is capped in length, and it stands in an inline code span longer than any
 * backtick run inside it, so it cannot end the span and go on as the bridge's words.
 */
export function inline(text: string, max = 200): PromptText {
  const flat = oneLine(text, max);
  let longest = 0;
  for (const m of flat.matchAll(/`+/g)) longest = Math.max(longest, m[0].length);
  const f = "`".repeat(longest + 1);
  const pad = flat.startsWith("`") || flat.endsWith("`") ? " " : "";
  return made(`${f}${pad}${flat}${pad}${f}`);
}

const HEX64 = /^[0-9a-f]{64}$/;

/** An event id or hex key as it is when it is 64 lowercase hex digits; anything else fenced inline. */
export function hexId(value: string): PromptText {
  return HEX64.test(value) ? made(value) : inline(value, 80);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A channel id as Buzz writes one (a lowercase UUID) as it is; anything else fenced inline. */
export function channelIdText(id: string): PromptText {
  return UUID.test(id) ? made(id) : inline(id, 80);
}

/** A pubkey as its npub; a value that is not a 64-hex key is fenced inline instead of throwing. */
export function npubText(pubkey: string): PromptText {
  return HEX64.test(pubkey) ? made(npub(pubkey)) : inline(pubkey, 80);
}

/** A created_at (seconds) as an ISO time. */
export function timeText(createdAt: number): PromptText {
  const d = new Date(createdAt * 1000);
  return made(Number.isNaN(d.getTime()) ? "unknown time" : d.toISOString());
}

/**
 * The most of one member's message a prompt carries (characters, ≈ 12k tokens): a larger
 * message (Buzz accepts up to 256 KB) would crowd out the rest of the turn's context.
 */
const MAX_MESSAGE_CHARS = 50_000;

/**
 * `text` cut to `max` characters with a visible marker saying how much is left out and
 * where to read it, so a large mention is never dropped nor silently shortened.
 */
export function cutForPrompt(text: string, eventId: string, max = MAX_MESSAGE_CHARS): string {
  if (text.length <= max) return text;
  let end = max;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--; // keep a surrogate pair whole
  return `${text.slice(0, end)}\n[… cut by the bridge: ${text.length - end} more characters of this message are not shown; get_thread with event ${eventId} reads it in full]`;
}

/**
 * `text` on one line: control characters and line breaks collapse to spaces; capped in
 * length. Plain text, not PromptText: `inline` puts it into a prompt, or `fence` with the
 * rest of a listing (prompt/attachment-listing.ts).
 */
export function oneLine(text: string, max: number): string {
  const flat = text
    .replace(/[\p{Cc}\p{Zl}\p{Zp}]+/gu, " ")
    .replace(/\s+/g, " ")
    .trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
