/** Which Node versions buzz-bridge takes (src/base/node-version.ts): 22.13+, 23.4+, 24 and later. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { nodeRefusal, nodeSupported } from "../../src/base/node-version.js";

test("node:sqlite without a flag: 22.13+, 23.4+, 24+; older ones refused", () => {
  const taken = ["22.13.0", "v22.23.5", "23.4.0", "24.0.0", "24.22.3", "26.1.0"];
  const refused = ["18.20.4", "20.20.2", "v21.7.3", "22.0.0", "22.12.0", "23.3.0"];
  assert.deepEqual(
    taken.filter((v) => !nodeSupported(v)),
    [],
  );
  assert.deepEqual(
    refused.filter((v) => nodeSupported(v)),
    [],
  );
});

test("the refusal names the Node found, where it is, and how to get 22 or 24", () => {
  assert.equal(nodeRefusal("24.22.3", "/usr/bin/node"), undefined);
  const line = nodeRefusal("20.20.2", "/usr/bin/node")!;
  assert.ok(line.includes("Node 20.20.2 (/usr/bin/node)"), line);
  assert.match(line, /needs Node 22\.13\.0 or newer/);
  assert.match(line, /distribution's nodejs package/);
  assert.match(line, /node-linux-<arch>/);
  assert.doesNotMatch(line, /\n/);
});
