/** `buzz-bridge demo`: the main job on the embedded default, as a person runs it. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { finalizeEvent, generateSecretKey } from "nostr-tools";
import { formatTranscript } from "../src/demo/transcript.js";

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
  // The script's order, whatever the events' ids (several are posted within one second).
  const order = ["alice (owner):", "bob (teammate):", "mallory (stranger):"].map((h) => out.indexOf(h));
  assert.ok(order[0]! >= 0 && order[0]! < order[1]! && order[1]! < order[2]!, `alice, then bob, then mallory:\n${out}`);
  assert.doesNotMatch(out, /\b\d{13}\b/, "no raw millisecond timestamps");
  // The agent's reply is indented under alice's message and quotes the channel description:
  // read each top-level message's block (its header line up to the next header).
  const block = (who: string): string => {
    const start = out.indexOf(`  ${who}:`);
    assert.ok(start >= 0, `${who}'s message is in the transcript`);
    const rest = out.slice(start);
    const next = rest.slice(1).search(/\n\d\d:\d\d:\d\d {2}\S|\n── /);
    return next < 0 ? rest : rest.slice(0, next + 1);
  };
  const aliceThread = block("alice (owner)");
  assert.match(aliceThread, /👀 agent {3}✅ agent/, "picked up, then answered");
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

test("the transcript lists messages of one second in the order they were posted, not by id", () => {
  const at = Math.floor(Date.now() / 1000);
  const post = (text: string) => finalizeEvent({ kind: 9, created_at: at, tags: [["h", "c"]], content: text }, generateSecretKey());
  const posts = Array.from({ length: 6 }, (_, i) => post(`message ${i}`));
  const text = formatTranscript([...posts].reverse(), { names: new Map(), order: posts.map((e) => e.id) });
  const shown = [...text.matchAll(/message (\d)/g)].map((m) => Number(m[1]));
  assert.deepEqual(shown, [0, 1, 2, 3, 4, 5]);
});
