#!/usr/bin/env node
// Runs every test/*.test.ts with Node's built-in runner (TypeScript via tsx).
// Node 20's --test has no glob support, so the file list is built here.
// TEST_FILTER=substring narrows the run to matching file names.
import { readdirSync } from "node:fs";
import { spawn } from "node:child_process";

// The runner starts files in the order given, two at a time. The files that take longest
// (about 40 s to 2 min each on two cores, measured in a CI run) start first, so that the two
// slots end together instead of one long file running alone at the end (longest first is
// the classic rule for that); the rest follow alphabetically. A file missing from this list
// or no longer slow only costs wall time, never a result: tests do not depend on order.
const LONGEST_FIRST = [
  "reliability-relay-drops",
  "reliability-restarts",
  "fleet-daemons",
  "relay-quota",
  "team-daemon",
  "agent-preset-opencode",
  "agent-pool",
  "turn-sessions",
  "relay-lifetime",
  "fleet-midturn",
  "reliability-faults",
  "reliability-aimed-faults",
  "reliability-full-disk",
  "convo-questions",
  "security-files",
  "reliability-batch-failures",
  "ops-start-refusals",
  "fleet-start",
  "daemon-service",
  "agent-preset-gemini",
  "agent-sandbox",
  "relay-reconnect",
  "agent-session-settings",
  "doctor-presets",
];
const rank = (f) => {
  const i = LONGEST_FIRST.indexOf(f.replace(/\.test\.ts$/, ""));
  return i < 0 ? LONGEST_FIRST.length : i;
};

const filter = process.env.TEST_FILTER ?? "";
const files = readdirSync("test")
  .filter((f) => f.endsWith(".test.ts") && f.includes(filter))
  .sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : 1))
  .map((f) => `test/${f}`);
if (files.length === 0) {
  console.error(`no test files match ${JSON.stringify(filter)}`);
  process.exit(1);
}
const args = ["--import", "tsx", "--test", "--test-concurrency=2", ...process.argv.slice(2), ...files];
const child = spawn(process.execPath, args, { stdio: "inherit" });
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
