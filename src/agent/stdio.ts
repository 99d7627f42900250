/**
 * Line-level views of an agent's stdio: stderr split into lines for the log, and a
 * pass-through watch on stdout that spots lines that are not JSON-RPC. The SDK skips
 * such lines silently, which would turn a misconfigured command (a CLI that prints its
 * usage) into a 30 s initialize timeout instead of a clear error.
 */
import { Transform, type Readable } from "node:stream";

/** Calls `onLine` for each line of a text stream, the unterminated last one included. */
export function eachLine(stream: Readable, onLine: (line: string) => void): void {
  let partial = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    const lines = (partial + chunk).split("\n");
    partial = lines.pop() ?? "";
    for (const l of lines) onLine(l.replace(/\r$/, ""));
  });
  stream.on("end", () => {
    if (partial) onLine(partial);
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
