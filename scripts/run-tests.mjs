#!/usr/bin/env node
// Runs the test files with Node's built-in runner (TypeScript via tsx), in two tiers
// (docs/testing.md):
//   test/unit/*.test.ts  the in-process tier: no child process, no daemon; `npm run test:unit`
//   test/*.test.ts       the process tier: real daemons, relays, agents and servers
// `npm test` runs both. TEST_FILTER=substring narrows the run to matching file names.
//
// The unit tier runs first, in four processes that share its files (unitTier below); then the
// process tier, four files at a time (TEST_CONCURRENCY to change both): a process-tier file
// spends most of its wall time waiting on what it tests (a retry's backoff, a hold, a daemon's
// patience window, an agent's own retries), so two at a time left the two cores idle much of
// the run; four keep them busy (docs/testing.md, "Suite cost": 28 min at two, 13 at four).
//
// Order: the runner starts files in the order given. Files that took longest
// in the last run on this checkout start first, so that both slots end together instead of
// one long file running alone at the end (longest first is the classic rule for that). The
// times are measured, never kept by hand: each run records every file's time in
// node_modules/.cache/buzz-bridge/test-times.json; a checkout without that record (a fresh
// clone, CI) uses test/test-times.json, the record of a whole run committed with the tests
// (`npm run test:times` refreshes it). A file missing from both only costs wall time, never
// a result: tests do not depend on order. At the end the 20 slowest files are printed.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";

const UNIT = "test/unit";
const CACHE = "node_modules/.cache/buzz-bridge/test-times.json";
const COMMITTED = "test/test-times.json";

const argv = process.argv.slice(2);
const tierAt = argv.indexOf("--tier");
const tier = tierAt >= 0 ? argv[tierAt + 1] : "all";
if (tier !== "unit" && tier !== "all") {
  console.error(`--tier takes unit or all, not ${JSON.stringify(tier)}`);
  process.exit(1);
}
const saveCommitted = argv.includes("--save-times");
const passThrough = argv.filter((a, i) => a !== "--save-times" && i !== tierAt && i !== tierAt + 1);

const filter = process.env.TEST_FILTER ?? "";
const listed = (dir) =>
  readdirSync(dir)
    .filter((f) => f.endsWith(".test.ts") && f.includes(filter))
    .map((f) => `${dir}/${f}`);
const files = [...(tier === "all" ? listed("test") : []), ...listed(UNIT)];
if (files.length === 0) {
  console.error(`no test files match ${JSON.stringify(filter)}`);
  process.exit(1);
}

const readTimes = (path) => {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return {};
  }
};
const known = { ...readTimes(COMMITTED), ...readTimes(CACHE) };
// Unknown files go first: a new test file is as likely as any to be slow, and a short one
// at the start costs nothing.
const seconds = (f) => known[f] ?? Number.POSITIVE_INFINITY;
files.sort((a, b) => seconds(b) - seconds(a) || (a < b ? -1 : 1));

const common = ["--import", "tsx", "--import", "./scripts/unit-tier-guard.mjs", "--test", ...passThrough];
// Node's compile cache (Node 22.1+) keeps V8's code for the modules the test files, daemons,
// proxies and demo agents load, so the hundreds of processes a run starts compile each module
// once instead of every time (about a fifth of a daemon's start-up CPU). A cache it cannot
// write (a daemon run as nobody) is skipped silently by Node; agents never see the variable,
// their environment is an allow-list (src/agent/env.ts).
// BUZZ_TEST_TROUBLE_DIR: where the test world notes each daemon's agent crashes and failed
// starts by test file (kit/world.ts), printed below under a failed file.
const troubleDir = mkdtempSync(join(tmpdir(), "buzz-bridge-test-trouble-"));
const env = {
  ...process.env,
  NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? resolve("node_modules/.cache/buzz-bridge/v8"),
  BUZZ_TEST_TROUBLE_DIR: troubleDir,
};
const concurrency = Number(process.env.TEST_CONCURRENCY ?? 4);
const unitFiles = files.filter((f) => f.startsWith(`${UNIT}/`));
const processFiles = files.filter((f) => !f.startsWith(`${UNIT}/`));

// Each test runner runs in a process group of its own, so that stopping the run (Ctrl-C, a CI
// timeout's SIGTERM) stops every test file and the daemons, agents and servers they started,
// none left behind.
const running = new Set();
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"])
  process.on(signal, () => {
    for (const child of running)
      try {
        process.kill(-child.pid, signal);
      } catch {
        /* the group has ended */
      }
  });

let runs = 0;
/** Runs `node --test` over `args`; resolves with its exit code and its times report. */
function runner(args, o = {}) {
  const timesOut = join(tmpdir(), `buzz-bridge-test-times-${process.pid}-${++runs}.json`);
  const reporters = [
    "--test-reporter=spec",
    `--test-reporter-destination=${o.specTo ?? "stdout"}`,
    "--test-reporter=./scripts/file-times-reporter.mjs",
    `--test-reporter-destination=${timesOut}`,
  ];
  const child = spawn(process.execPath, [...common, ...reporters, ...args], {
    stdio: "inherit",
    env: { ...env, ...o.env },
    detached: true,
  });
  running.add(child);
  return new Promise((done) =>
    child.on("exit", (code, signal) => {
      running.delete(child);
      const report = readTimes(timesOut);
      rmSync(timesOut, { force: true });
      done({ code: code ?? (signal ? 1 : 0), report });
    }),
  );
}

/**
 * The in-process tier, in `concurrency` processes that each run their share of the files one
 * after another in one module graph (`--test-isolation=none`): a file of this tier spends about
 * a CPU-second starting a process and loading its modules, more than most spend on their
 * tests, and their waits (a relay's back-off, a socket's deadline) overlap across the shares.
 * Shares are balanced by the recorded times, longest file first into the lightest share (a
 * file not yet timed counts as 5 s). A
 * file's top-level hooks would apply to every file of its share: test/unit/shared-process.test.ts
 * keeps them inside a describe. Each share's report is printed whole when it ends.
 */
async function unitTier() {
  const shares = Array.from({ length: Math.max(1, Math.min(concurrency, unitFiles.length)) }, () => ({ files: [], s: 0 }));
  for (const f of unitFiles) {
    const lightest = shares.reduce((a, b) => (b.s < a.s ? b : a));
    lightest.files.push(f);
    lightest.s += Number.isFinite(seconds(f)) ? seconds(f) : 5;
  }
  const outDir = mkdtempSync(join(tmpdir(), "buzz-bridge-unit-tier-"));
  const results = await Promise.all(
    shares.map(async (share, i) => {
      const specTo = join(outDir, `share-${i}.txt`);
      const r = await runner(["--test-isolation=none", ...share.files], { specTo, env: { BUZZ_TEST_TIER: "unit" } });
      process.stdout.write(
        `\n── unit tier, share ${i + 1} of ${shares.length} (${share.files.length} file${share.files.length === 1 ? "" : "s"})\n`,
      );
      process.stdout.write(existsSync(specTo) ? readFileSync(specTo, "utf8") : "(no report)\n");
      return r;
    }),
  );
  rmSync(outDir, { recursive: true, force: true });
  return results;
}

const started = Date.now();
const results = [];
if (unitFiles.length) {
  results.push(...(await unitTier()));
  const failed = results.filter((r) => r.code !== 0).length;
  const took = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `\nunit tier: ${unitFiles.length} file(s) in ${took} s, ${failed ? `failed in ${failed} of ${results.length} shares` : "passed"}`,
  );
}
if (processFiles.length) results.push(await runner([`--test-concurrency=${concurrency}`, ...processFiles]));

const measured = Object.assign({}, ...results.map((r) => r.report.seconds ?? {}));
printTrouble(results.flatMap((r) => r.report.failed ?? []));
rmSync(troubleDir, { recursive: true, force: true });
const slowest = Object.entries(measured)
  .sort((a, b) => b[1] - a[1])
  .slice(0, 20);
if (slowest.length) {
  console.log("\nthe 20 slowest test files (seconds):");
  for (const [file, s] of slowest) console.log(`${s.toFixed(1).padStart(8)}  ${file}`);
}
if (Object.keys(measured).length && !filter) {
  mkdirSync("node_modules/.cache/buzz-bridge", { recursive: true });
  writeFileSync(CACHE, `${JSON.stringify({ ...readTimes(CACHE), ...measured }, null, 1)}\n`);
  if (saveCommitted && tier === "all") writeFileSync(COMMITTED, `${JSON.stringify(sortedByName(measured), null, 1)}\n`);
}
process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0;

/**
 * Under each failed test file, what its daemons' agents did wrong (crashes with their exit
 * and stderr, failed starts, the circuit breaker): a test refused by the breaker shows only
 * "crashed 3 times", and the daemon's log is gone with its world. A failure in a fixture
 * (test/fixtures/*.ts) is shown with the test files that name that fixture.
 */
function printTrouble(failed) {
  const testFiles = new Set();
  for (const f of failed) {
    if (f.endsWith(".test.ts")) testFiles.add(f);
    else for (const t of files) if (readFileSync(t, "utf8").includes(`/${basename(f, ".ts")}.js`)) testFiles.add(t);
  }
  for (const f of testFiles) {
    const path = join(troubleDir, `${basename(f)}.jsonl`);
    if (!existsSync(path)) continue;
    console.log(`\nwhat the agents of ${f}'s daemons did wrong (agent.crash, agent.start_failed, agent.spare_failed, agent.circuit):`);
    for (const line of readFileSync(path, "utf8").split("\n").filter(Boolean)) {
      const { level, time, pid, msg, ...rest } = JSON.parse(line);
      console.log(`  ${new Date(time).toISOString().slice(11, 23)} daemon ${pid} ${JSON.stringify(rest)}`);
    }
  }
}

function sortedByName(times) {
  return Object.fromEntries(Object.entries(times).sort((a, b) => (a[0] < b[0] ? -1 : 1)));
}
