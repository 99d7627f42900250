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
 * A value shown inside a header line (names, channel names, descriptions): control
 * characters and line breaks collapse to spaces so it cannot begin a line that looks
 * like one of the bridge's own headings; capped in length.
 */
export function oneLine(text: string, max = 200): string {
  const flat = text.replace(/[\p{Cc}\p{Zl}\p{Zp}]+/gu, " ").replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
