// `npm run mutate` (docs/testing.md "Mutation testing"): Stryker mutates the modules where a
// silent bug costs users most and runs the fast, in-process tests that cover them against
// each mutant. Not part of `npm test`. The TypeScript checker drops mutants that do not
// compile (through TypeScript 5: scripts/mutate/typescript5.mjs).
/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  mutate: [
    // The gate's decision and the policy it applies.
    "src/gate/decide.ts",
    "src/gate/policy.ts",
    // relay → gate → queue: what is accepted, queued and joined to a running turn.
    "src/turn/intake.ts",
    // What a turn still has to answer, and the failure notice when it cannot.
    "src/turn/answers.ts",
    // Bridge-side stop gates and the proxy's hook fan-out and merge.
    "src/turn/stop-gates.ts",
    "src/proxy/hooks.ts",
    // The reply's thread references (NIP-10 root and parent).
    "src/nostr/events.ts",
    // The queue's once-only claims go here with the test that covers them once the
    // scheduler has its one backend interface (queue/).
  ],
  testRunner: "tap",
  tap: {
    testFiles: [
      "test/gate-policy.test.ts",
      "test/gate-denied.test.ts",
      "test/gate-control.test.ts",
      "test/daemon-wiring-units.test.ts",
      "test/turn-units.test.ts",
      "test/turn-intake-units.test.ts",
      "test/turn-answers-units.test.ts",
      "test/proxy-hooks-units.test.ts",
      "test/nostr-events-units.test.ts",
    ],
    // Each test file runs on its own (TAP on stdout), with TypeScript through tsx.
    nodeArgs: ["-r", "{{hookFile}}", "--import", "tsx", "{{testFile}}"],
    forceBail: true,
  },
  checkers: ["typescript"],
  tsconfigFile: "tsconfig.json",
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  coverageAnalysis: "perTest",
  concurrency: 2,
  timeoutMS: 10_000,
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "reports/mutation/index.html" },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true, reportMutants: true },
  thresholds: { high: 90, low: 85, break: null },
  tempDirName: ".stryker-tmp",
  cleanTempDir: "always",
};
