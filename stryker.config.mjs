// `npm run mutate` (docs/testing.md "Mutation testing"): Stryker mutates the modules where a
// silent bug costs users most and runs the fast, in-process tests that cover them against
// each mutant. Not part of `npm test`. The TypeScript checker drops mutants that do not
// compile (through TypeScript 5: scripts/mutate/typescript5.mjs).
import { readFileSync } from "node:fs";

// The queue contract test's SQLite half only (test/queue-state-store.test.ts); the test
// runners Stryker starts inherit this.
process.env.BB_QUEUE_BACKENDS ??= "sqlite";

/**
 * `file`'s lines from the first that starts with `start` to the first from there that starts
 * with `end` (by default a method's closing brace), as Stryker's `file:from-to`. Found by text,
 * so the range follows the code when lines above it move; a start or end no longer there
 * stops the run instead of mutating the wrong lines.
 */
function span(file, start, end = "  }") {
  const lines = readFileSync(new URL(file, import.meta.url), "utf8").split("\n");
  const from = lines.findIndex((l) => l.startsWith(start));
  const to = from < 0 ? -1 : lines.findIndex((l, i) => i >= from && l.startsWith(end));
  if (to < 0) throw new Error(`stryker.config.mjs: no "${start}" … "${end}" in ${file}: the code moved, update the span`);
  return `${file}:${from + 1}-${to + 1}`;
}

const typescript5 = new URL("./scripts/mutate/typescript5.mjs", import.meta.url).href;

// The covering tests are the files tsconfig.mutate.json compiles, one list: a test file named
// here but not compiled would be left out of every run without a word.
const testFiles = JSON.parse(readFileSync(new URL("./tsconfig.mutate.json", import.meta.url), "utf8")).files.map(
  (f) => `.stryker-build/${f.replace(/\.ts$/, ".js")}`,
);

/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  mutate: [
    // The gate's decision and the policy it applies.
    "src/gate/decide.ts",
    "src/gate/policy.ts",
    // relay → gate → queue: what is accepted, queued and joined to a running turn.
    "src/intake/intake.ts",
    // What a turn still has to answer, and the failure notice when it cannot.
    "src/turn/published-answers.ts",
    // Bridge-side stop gates and the proxy's hook fan-out and merge.
    "src/turn/stop-gates.ts",
    "src/proxy/hooks.ts",
    // The reply's thread references (NIP-10 root and parent).
    "src/nostr/events.ts",
    // The queue's once-only paths: a scope claimed by one turn at a time, an event accepted
    // once, a turn ended once (accept … notifyFailure; the pass and a claimed scope's batch; not the fleet's lease renewal, which only PostgreSQL has),
    // and the backend's once-only claims (scopes, controls, denials, accepted ids) on SQLite.
    // Their contract test runs its SQLite half per mutant (BB_QUEUE_BACKENDS below): the
    // PostgreSQL half starts a server of its own, more than a run per mutant can afford.
    span("src/queue/scheduler.ts", "  async accept(ev: Event", "  private async notifyFailure("),
    span("src/queue/scheduler.ts", "  private async pass("),
    span("src/queue/scheduler.ts", "  private async prepare(h: Held"),
    span("src/queue/sqlite-store.ts", "  async claim(_holder"),
    ...["claimControl", "claimOnce", "claimFirst"].map((m) => span("src/queue/sqlite-store.ts", `  async ${m}(`)),
    ...["markAccepted", "isAccepted", "markDenied"].map((m) => span("src/queue/sqlite-store.ts", `  ${m}(`)),
    // A write that meets someone's lock on the queue file: waits once, then fails at once.
    "src/queue/lock-patience.ts",
    // What the bridge knows of its channels (type, members, joins and leaves).
    "src/buzz/directory.ts",
    // The refusal a denied author sees, once per window.
    "src/gate/denied.ts",
    // A team's config: each entry over the shared keys, what two agents may not share.
    "src/config/agents.ts",
    // A team's agents started, stopped and left stopped by a reload or their owner (the
    // in-process team starts real daemons: its two decisions, not its HTTP plumbing).
    span("src/app/daemon/team.ts", "  private async add("),
    span("src/app/daemon/team.ts", "  async reload("),
    // A single agent's queue moved into a team's state_dir.
    "src/app/daemon/team-state.ts",
    // Attachments: no private address, no signed auth off the relay's media path.
    "src/buzz/media-guard.ts",
    // The agent's questions to the channel and the answers it takes.
    "src/turn/questions.ts",
    // The "still working" note, its edits and its deletion.
    "src/turn/progress.ts",
    // Sockets replaced before the relay's connection lifetime ends.
    "src/relay/lifetime.ts",
    // The public work status (NIP-AW).
    "src/turn/work-status.ts",
  ],
  // The sandbox's instrumented sources and these tests are compiled to JavaScript once
  // (tsconfig.mutate.json), so each test file starts as plain node, not through tsx: per
  // mutant, that start-up is most of the cost.
  buildCommand: "npx tsc -p tsconfig.mutate.json",
  testRunner: "tap",
  tap: {
    testFiles,
    // Each test file runs on its own, writing TAP: node:test's default reporter is `spec`
    // even into a pipe (Node 24), and without TAP a failing file reaches Stryker only as its
    // exit code, which it reports as an error instead of a killed mutant.
    nodeArgs: ["-r", "{{hookFile}}", "--test-reporter=tap", "{{testFile}}"],
    forceBail: true,
  },
  checkers: ["typescript"],
  // The checker runs in worker processes of its own: they get the preload too.
  checkerNodeArgs: ["--import", typescript5],
  tsconfigFile: "tsconfig.json",
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  coverageAnalysis: "perTest",
  // One checker (idle once its first compile is done) and two test runners on 2 cores.
  concurrency: 3,
  timeoutMS: 10_000,
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "reports/mutation/index.html" },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true, reportMutants: true },
  thresholds: { high: 90, low: 85, break: null },
  tempDirName: ".stryker-tmp",
  cleanTempDir: "always",
};
