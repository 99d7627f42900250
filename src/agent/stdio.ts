/**
 * Line-level views of an agent's stdio: stderr split into lines for the log, and a
 * pass-through watch on stdout that spots lines that are not JSON-RPC. The SDK skips
 * such lines silently, which would turn a misconfigured command (a CLI that prints its
 * usage) into a 30 s initialize timeout instead of a clear error.
 */
import { Transform, type Readable } from "node:stream";

/** Longest stderr line passed on whole; the rest of a longer line is dropped, not buffered. */
export const MAX_LINE_CHARS = 8192;

/**
 * Calls `onLine` for each line of a text stream, the unterminated last one included. A
 * line longer than `maxChars` is passed on cut (`cut` true) as soon as it reaches the cap,
 * and its remainder up to the next newline is skipped: memory stays flat even when a
 * process writes one endless line.
 */
export function eachLine(stream: Readable, onLine: (line: string, cut: boolean) => void, maxChars = MAX_LINE_CHARS): void {
  let partial = "";
  let skipping = false;
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    let from = 0;
    for (;;) {
      const nl = chunk.indexOf("\n", from);
      const piece = chunk.slice(from, nl < 0 ? undefined : nl);
      if (skipping) {
        if (nl >= 0) skipping = false;
      } else {
        partial += piece;
        if (partial.length > maxChars) {
          onLine(partial.slice(0, maxChars), true);
          partial = "";
          skipping = nl < 0;
        } else if (nl >= 0) {
          onLine(partial.replace(/\r$/, ""), false);
          partial = "";
        }
      }
      if (nl < 0) break;
      from = nl + 1;
    }
  });
  stream.on("end", () => {
    if (partial) onLine(partial, false);
    partial = "";
  });
}

const KEEP = 4096;

/**
 * A Transform that forwards every byte unchanged and reports lines that are not JSON
 * objects. With `strict()` true (before the handshake) a line is parsed; afterwards only
 * its first character is looked at, so big messages are not parsed twice.
 */
export function watchJsonLines(onNonJson: (line: string) => void, strict: () => boolean): Transform {
  let partial = "";
  let truncated = false;
  const check = (line: string, cut: boolean) => {
    const t = line.trim();
    if (!t) return;
    let ok = t.startsWith("{");
    if (ok && strict() && !cut) {
      try {
        JSON.parse(t);
      } catch {
        ok = false;
      }
    }
    if (!ok) onNonJson(t);
  };
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      const lines = (partial + chunk.toString("utf8")).split("\n");
      partial = lines.pop() ?? "";
      lines.forEach((l, i) => check(l, i === 0 && truncated));
      if (lines.length) truncated = false;
      // Long lines are judged by their start; keeping all of them would double the memory.
      if (partial.length > KEEP) {
        partial = partial.slice(0, KEEP);
        truncated = true;
      }
      done(null, chunk);
    },
  });
}
