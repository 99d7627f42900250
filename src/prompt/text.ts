/**
 * Text helpers shared by the prompt builders: ACP text blocks, fences that member-written
 * text cannot close, and one-line labels that cannot start a line of their own.
 */

/** The ACP ContentBlock text shape (`{type: "text", text}`); one per prompt section. */
export interface TextBlock {
  type: "text";
  text: string;
}

export const block = (text: string): TextBlock => ({ type: "text", text });

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
export function fence(text: string, label = "untrusted"): string {
  let longest = 0;
  for (const m of text.matchAll(/`+/g)) longest = Math.max(longest, m[0].length);
  const f = "`".repeat(Math.max(3, longest + 1));
  return `${f}${label}\n${text}\n${f}`;
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
 * A value shown inside a header line (names, channel names, descriptions): control
 * characters and line breaks collapse to spaces so it cannot begin a line that looks
 * like one of the bridge's own headings; capped in length.
 */
export function oneLine(text: string, max = 200): string {
  const flat = text
    .replace(/[\p{Cc}\p{Zl}\p{Zp}]+/gu, " ")
    .replace(/\s+/g, " ")
    .trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
