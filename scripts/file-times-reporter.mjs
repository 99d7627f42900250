// A node:test reporter that writes one JSON object: `seconds`, each test file's seconds (the
// sum of its top-level tests' durations; the file's own start-up is not in it), and
// `failed`, the files that define a failed test. scripts/run-tests.mjs orders the next run
// by the first, prints the slowest files, and prints what the agents of the failed files'
// daemons did wrong.
import { relative } from "node:path";

export default async function* fileTimes(source) {
  const seconds = {};
  const failed = new Set();
  for await (const { type, data } of source) {
    if ((type !== "test:pass" && type !== "test:fail") || !data.file) continue;
    const file = relative(process.cwd(), data.file);
    if (type === "test:fail") failed.add(file);
    if (data.nesting !== 0) continue;
    seconds[file] = (seconds[file] ?? 0) + (data.details?.duration_ms ?? 0) / 1000;
  }
  for (const f of Object.keys(seconds)) seconds[f] = Math.round(seconds[f] * 10) / 10;
  yield JSON.stringify({ seconds, failed: [...failed] });
}
