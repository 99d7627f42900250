#!/usr/bin/env node
// Runs every test/*.test.ts with Node's built-in runner (TypeScript via tsx).
// Node 20's --test has no glob support, so the file list is built here.
// TEST_FILTER=substring narrows the run to matching file names.
import { readdirSync } from "node:fs";
import { spawn } from "node:child_process";

const filter = process.env.TEST_FILTER ?? "";
const files = readdirSync("test")
  .filter((f) => f.endsWith(".test.ts") && f.includes(filter))
  .sort()
  .map((f) => `test/${f}`);
if (files.length === 0) {
  console.error(`no test files match ${JSON.stringify(filter)}`);
  process.exit(1);
}
const args = ["--import", "tsx", "--test", "--test-concurrency=2", ...process.argv.slice(2), ...files];
const child = spawn(process.execPath, args, { stdio: "inherit" });
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
