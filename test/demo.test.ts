/** `buzz-bridge demo`: the main job on the embedded default, as a person runs it. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";

const CLI = join(import.meta.dirname, "..", "dist", "cli.js");

test("demo exits 0 and shows the owner answered in-thread with the channel description, the teammate answered and the stranger's 🔒", () => {
  const r = spawnSync(process.execPath, [CLI, "demo"], {
    encoding: "utf8",
    timeout: 120_000,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR },
  });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /✓ alice \(owner\): answered in the thread/);
  const out = r.stdout.slice(r.stdout.indexOf("── #release-room"));
  assert.match(out, /alice \(owner\):\n\s+@agent What is this room for/, "the owner's question");
  // The agent's reply is indented under alice's message and quotes the channel description.
  // Messages posted within the same second may be listed in either order: read each
  // top-level message's block (its header line up to the next header).
  const block = (who: string): string => {
    const start = out.indexOf(`  ${who}:`);
    assert.ok(start >= 0, `${who}'s message is in the transcript`);
    const rest = out.slice(start);
    const next = rest.slice(1).search(/\n\d\d:\d\d:\d\d {2}\S|\n── /);
    return next < 0 ? rest : rest.slice(0, next + 1);
  };
  const aliceThread = block("alice (owner)");
  assert.match(aliceThread, /│ \d\d:\d\d:\d\d {2}agent:/, "a threaded reply from the agent");
  assert.match(aliceThread, /Where the team ships buzz-bridge releases/, "the reply quotes the channel description");
  assert.match(aliceThread, /Never merge a release without a green/, "the reply saw the team instructions");
  const bobThread = block("bob (teammate)");
  assert.match(bobThread, /│ \d\d:\d\d:\d\d {2}agent:/, "the teammate was answered");
  const mallory = block("mallory (stranger)");
  assert.match(mallory, /🔒 agent/, "the stranger's message carries the 🔒 reaction");
  assert.doesNotMatch(mallory, /│ .*agent:/, "no reply to the stranger");
  assert.match(out, /"evt":"gate\.denied","reason":"not-allowlisted","author":"npub1su3h/, "the denial log line");
});

test("demo --help explains itself", () => {
  const r = spawnSync(process.execPath, [CLI, "demo", "--help"], { encoding: "utf8" });
  assert.equal(r.status, 0);
  assert.match(r.stdout, /--keep/);
});
