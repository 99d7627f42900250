/**
 * bench/README.md shows the last full run as `npm run bench` printed it: the same table as
 * bench/results.json gives (a Markdown table that renders: header, separator, rows), and
 * the run's date, machine and Node beside it. After a new run, paste its table and line.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { markdownTable } from "../../bench/run.js";

const readme = readFileSync("bench/README.md", "utf8");
const results = JSON.parse(readFileSync("bench/results.json", "utf8")) as {
  date: string;
  node: string;
  cpus: number;
  load_average_at_start: number;
  duration_s: number;
  rows: Parameters<typeof markdownTable>[0];
};

test("the table in bench/README.md is the one results.json gives, with its separator row", () => {
  const table = markdownTable(results.rows);
  assert.ok(readme.includes(`\n${table}\n`), "paste the table `npm run bench` printed (it matches results.json)");
  const [, sep] = table.split("\n");
  assert.match(sep!, /^\|(:?-+:?\|)+$/, "a separator row, so the table renders");
});

test("the run's date, CPUs, load, Node and duration are the ones results.json records", () => {
  const at = new Date(results.date).toISOString().slice(0, 16).replace("T", " ");
  const line = `${results.cpus} CPUs (load ${results.load_average_at_start.toFixed(1)} at start), Node ${results.node}, ${Math.round(results.duration_s)} s, ${at} UTC`;
  assert.ok(readme.includes(line), `expected: ${line}`);
});
