/**
 * The unit tier runs its files a share at a time in one process (scripts/run-tests.mjs,
 * `--test-isolation=none`), so what a file does at its top level reaches every file of its
 * share: a root `beforeEach` / `afterEach` runs around their tests too (a mock clock enabled
 * before each of them stalls the first that waits on a real socket), and a `mock.…` call left
 * at the top level stays in force for the rest of the share. Such hooks and mocks go inside a
 * `describe`, or inside the test. A root `before` / `after` is fine: it runs once around the
 * share, as around the file.
 *
 * Pinned twice, like the layers: the real tree keeps the rule, and the check names each kind
 * in a sample, so a check that matched nothing fails here.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const UNIT = "test/unit";

/** Each statement at the top level of `text` that would act on every file of a share. */
function sharedStatements(text: string): string[] {
  return [...text.matchAll(/^(?:beforeEach|afterEach)\s*\(|^mock\.[\w.]+\s*\(/gm)].map((m) => m[0]);
}

test("no unit test file hooks or mocks at its top level (its share's other files would run under them)", () => {
  const offenders: string[] = [];
  for (const name of readdirSync(UNIT).filter((f) => f.endsWith(".ts"))) {
    for (const s of sharedStatements(readFileSync(join(UNIT, name), "utf8"))) offenders.push(`${UNIT}/${name}: ${s}`);
  }
  assert.deepEqual(offenders, [], "put the hook or the mock inside a describe (or the test) of its own");
});

test("the check names a root beforeEach, a root afterEach and a top-level mock, and lets nested ones and root before/after pass", () => {
  const sample = [
    'import { afterEach, beforeEach, describe, mock, test, after } from "node:test";',
    'beforeEach(() => mock.timers.enable({ apis: ["setTimeout"] }));',
    "afterEach(() => mock.timers.reset());",
    'mock.method(console, "log");',
    "after(() => undefined);",
    'describe("nested", () => {',
    "  beforeEach(() => mock.timers.enable());",
    "  afterEach(() => mock.timers.reset());",
    '  test("t", () => { mock.method(console, "warn"); });',
    "});",
  ].join("\n");
  assert.deepEqual(sharedStatements(sample), ["beforeEach(", "afterEach(", "mock.method("]);
});
