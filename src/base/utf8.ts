/**
 * Text measured in UTF-8 bytes, as the relay and MCP count it (a message's `content`, a
 * hook's answer): the longest start of a string that fits a byte budget, in whole
 * characters.
 */

/** The longest prefix of `text` that is at most `bytes` UTF-8 bytes and splits no character. */
export function utf8Prefix(text: string, bytes: number): string {
  const { read } = new TextEncoder().encodeInto(text, new Uint8Array(Math.max(0, bytes)));
  return text.slice(0, read);
}
