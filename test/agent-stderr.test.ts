// An agent's stderr reaches the log bounded: lines cut at a fixed length, a rate limit per
// kind of line with the held-back count logged, and flat memory under an endless line.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { join } from "node:path";
import { AgentProcess, agentEnvironment } from "../src/agent/index.js";
import { eachLine, MAX_LINE_CHARS } from "../src/agent/stdio.js";
import { FIXTURES, tempDir } from "./fixtures/agent-helpers.js";
import { captureLogger } from "../kit/queue-helpers.js";
import { sleep, waitFor } from "../kit/wait.js";

const tmp = tempDir();
after(() => tmp.cleanup());

test("a line that never ends is passed on cut at the cap, and the rest of it is never buffered", async () => {
  const s = new PassThrough();
  const lines: Array<[string, boolean]> = [];
  eachLine(s, (l, cut) => lines.push([l, cut]));
  const heapBefore = process.memoryUsage().heapUsed;
  const chunk = "y".repeat(64 * 1024);
  // 48 MiB in one line: kept whole (as the old splitter did) it would weigh 48 MiB and be re-split on every chunk.
  for (let i = 0; i < 768; i++) s.write(chunk);
  await new Promise((r) => setImmediate(r));
  const grown = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
  s.end("tail of it\nnext line\npartial");
  await new Promise((r) => s.on("end", r));
  assert.deepEqual(
    lines.map(([l, cut]) => [l.length, cut]),
    [
      [MAX_LINE_CHARS, true],
      [9, false],
      [7, false],
    ],
  );
  assert.equal(lines[1]![0], "next line", "the line after the endless one arrives whole");
  assert.ok(grown < 16, `heap grew by ${grown.toFixed(1)} MiB while 48 MiB of one line streamed through`);
});

test("an agent flooding stderr: a bounded number of log lines, every held-back line counted, a 64 MiB line cut", {
  timeout: 60_000,
}, async () => {
  const { logger, lines } = captureLogger("info");
  const proc = await AgentProcess.start({
    command: process.execPath,
    args: [join(FIXTURES, "agent-bad.mjs"), "flood"],
    cwd: tmp.dir,
    env: { ...agentEnvironment().env, FLOOD_LINES: "2000", FLOOD_MIB: "64" },
    logger,
    stderrLogLimit: { perWindow: 10, windowMs: 400 },
  });
  try {
    // 2,000 short lines + the endless one (cut) + "after the flood": 2,002 lines in all.
    const total = 2002;
    const accounted = () =>
      lines.filter((l) => l.evt === "agent.stderr").length +
      lines.filter((l) => l.evt === "agent.stderr_suppressed").reduce((n, l) => n + (l.suppressed as number), 0);
    await waitFor(() => accounted() >= total, {
      timeoutMs: 45_000,
      intervalMs: 100,
      what: () => `every stderr line logged or counted as held back (${accounted()} of ${total})`,
    });
    await sleep(500); // a line logged or counted twice would show up by now
    const shown = lines.filter((l) => l.evt === "agent.stderr");
    assert.equal(accounted(), total, `every stderr line is either logged or counted as held back (${shown.length} logged)`);
    const windows = lines.filter((l) => l.evt === "agent.stderr_suppressed").length;
    assert.ok(shown.length <= 10 * (windows + 1), `at most 10 lines per window (${shown.length} lines, ${windows} windows)`);
    assert.ok(shown.length < 200, `far fewer lines than were written (${shown.length})`);
    assert.ok(
      lines.every((l) => JSON.stringify(l).length < MAX_LINE_CHARS + 1000),
      "no log line carries more than one capped stderr line",
    );
    assert.ok(
      proc
        .stderrTail()
        .split("\n")
        .every((l) => l.length <= 2000),
      "the crash-report tail keeps short lines",
    );
  } finally {
    await proc.close(200);
  }
});
