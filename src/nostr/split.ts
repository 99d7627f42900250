/**
 * Messages longer than the relay takes, as ordered parts (docs/protocol.md, "Limits": Buzz
 * refuses content over 256 KB and frames over 512 KiB). Each part is marked `(i/n)` at its
 * start so readers see the order and that nothing is missing; parts break at a line end
 * where one is near, never inside a character. Sizes are measured JSON-escaped, as the
 * content travels in the frame, so a part also fits the frame limit.
 *
 * One pass over the text: each UTF-16 unit's escaped size is counted once, so splitting
 * costs time in proportion to the text, however many parts it makes.
 */

/** Buzz's content limit, 256 KB. */
export const MAX_CONTENT_BYTES = 256 * 1024;
/** Room kept for the `(12/34) ` marker. */
const MARKER_ROOM = 32;

/**
 * Bytes the unit at `i` takes in JSON.stringify's UTF-8 output; a surrogate pair counts 4 on
 * its high half and 0 on its low half (so a piece never ends between them, see `pairAt`).
 */
function unitBytes(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c < 0x80) {
    if (c >= 0x20) return c === 0x22 || c === 0x5c ? 2 : 1; // \" and \\
    return c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 2 : 6;
  }
  if (c < 0x800) return 2;
  if (c < 0xd800 || c > 0xdfff) return 3;
  if (c <= 0xdbff) return isLow(text.charCodeAt(i + 1)) ? 4 : 6; // a lone surrogate is written \udxxx
  return isLow(c) && isHigh(text.charCodeAt(i - 1)) ? 0 : 6;
}

const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/** The escaped size of `text` as JSON.stringify writes it, counted without building that string. */
export function escapedSize(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) bytes += unitBytes(text, i);
  return bytes;
}

/** `text` as one piece when it fits, else as marked parts `(1/n) …`, in order. */
export function splitContent(text: string, maxBytes = MAX_CONTENT_BYTES): string[] {
  if (escapedSize(text) <= maxBytes) return [text];
  const budget = maxBytes - MARKER_ROOM;
  const pieces: string[] = [];
  let start = 0;
  while (start < text.length) {
    // Grow the piece unit by unit until the next one would not fit.
    let end = start;
    let size = 0;
    while (end < text.length) {
      const b = unitBytes(text, end);
      if (size + b > budget && end > start) break;
      size += b;
      end++;
      if (b === 4) end++; // the pair's low half, counted with its high half
    }
    if (end < text.length) {
      // Prefer a line break in the last fifth of the piece, so code and paragraphs stay whole
      // (looked for in that fifth only: the search stays within the piece).
      const floor = start + (end - start) * 0.8;
      for (let i = end - 1; i > floor; i--) {
        if (text.charCodeAt(i) === 0x0a) {
          end = i + 1;
          break;
        }
      }
    }
    pieces.push(text.slice(start, end));
    start = end;
  }
  return pieces.map((p, i) => `(${i + 1}/${pieces.length}) ${p}`);
}
