// A node:test reporter that writes one JSON object: each test file's seconds, the sum of its
// top-level tests' durations (the file's own start-up is not in it). scripts/run-tests.mjs
// orders the next run by it and prints the slowest files.
import { relative } from "node:path";

export default async function* fileTimes(source) {
  const seconds = {};
  for await (const { type, data } of source) {
    if ((type !== "test:pass" && type !== "test:fail") || data.nesting !== 0 || !data.file) continue;
    const file = relative(process.cwd(), data.file);
    seconds[file] = (seconds[file] ?? 0) + (data.details?.duration_ms ?? 0) / 1000;
  }
  for (const f of Object.keys(seconds)) seconds[f] = Math.round(seconds[f] * 10) / 10;
  yield JSON.stringify(seconds);
}
