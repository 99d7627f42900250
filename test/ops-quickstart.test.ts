/**
 * The README's quick start, run as written from this checkout (test/fixtures/quickstart.ts
 * walks it; test/ops-release.test.ts walks it again from the installed package). Step 1
 * (`npm ci && npm run build && npm link`) is what the suite's own build already did: a
 * `buzz-bridge` on PATH that runs this checkout's dist/cli.js stands for `npm link`.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI } from "../kit/world.js";
import { quickStart, walkQuickStart } from "./fixtures/quickstart.js";

const home = mkdtempSync(join(tmpdir(), "bb-quickstart-"));
after(() => rmSync(home, { recursive: true, force: true }));

test("the quick start is numbered steps 1 to 6, each with one shell block, step 1 the build", () => {
  const steps = quickStart();
  assert.deepEqual(
    steps.map((s) => s.n),
    [1, 2, 3, 4, 5, 6],
  );
  assert.equal(steps[0]!.script, "npm ci && npm run build && npm link", "what this test stands in for with a PATH entry");
  assert.match(steps[3]!.script, /command: buzz-bridge\n\s+args: \[demo-agent\]/, "no API key: the demo agent");
  assert.match(steps[2]!.script, /--data relay-data/, "the relay keeps its state across restarts");
});

test("steps 2 to 6, as written, reach a reply in the owner's thread, shown by tail with the seed's names", async () => {
  const bin = join(home, "bin");
  mkdirSync(bin);
  // What `npm link` gives: `buzz-bridge` on PATH, running this checkout.
  writeFileSync(join(bin, "buzz-bridge"), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
  chmodSync(join(bin, "buzz-bridge"), 0o755);
  await walkQuickStart({ home, env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
});
