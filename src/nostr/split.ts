/**
 * Messages longer than the relay takes, as ordered parts (docs/protocol.md, "Limits": Buzz
 * refuses content over 256 KB and frames over 512 KiB). Each part is marked `(i/n)` at its
 * start so readers see the order and that nothing is missing; parts break at a line end
 * where one is near, never inside a character. Sizes are measured JSON-escaped, as the
 * content travels in the frame, so a part also fits the frame limit.
 */

/** Buzz's content limit, 256 KB. */
export const MAX_CONTENT_BYTES = 256 * 1024;
/** Room kept for the `(12/34) ` marker. */
const MARKER_ROOM = 32;

const escapedBytes = (s: string) => Buffer.byteLength(JSON.stringify(s), "utf8") - 2;

/** The longest prefix of `text` (in UTF-16 units, never splitting a surrogate pair) within `max` escaped bytes. */
function fit(text: string, max: number): number {
  let lo = 1;
  let hi = text.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (escapedBytes(text.slice(0, mid)) <= max) lo = mid;
    else hi = mid - 1;
  }
  const code = text.charCodeAt(lo - 1);
  if (lo < text.length && code >= 0xd800 && code <= 0xdbff) lo--; // keep the pair together
  return Math.max(1, lo);
}

/** `text` as one piece when it fits, else as marked parts `(1/n) …`, in order. */
export function splitContent(text: string, maxBytes = MAX_CONTENT_BYTES): string[] {
  if (escapedBytes(text) <= maxBytes) return [text];
  const budget = maxBytes - MARKER_ROOM;
  const pieces: string[] = [];
  let rest = text;
  while (rest.length > 0) {
    if (escapedBytes(rest) <= budget) {
      pieces.push(rest);
      break;
    }
    let end = fit(rest, budget);
    // Prefer a line break in the last fifth of the piece, so code and paragraphs stay whole.
    const nl = rest.lastIndexOf("\n", end - 1);
    if (nl > end * 0.8) end = nl + 1;
    pieces.push(rest.slice(0, end));
    rest = rest.slice(end);
  }
  return pieces.map((p, i) => `(${i + 1}/${pieces.length}) ${p}`);
}
