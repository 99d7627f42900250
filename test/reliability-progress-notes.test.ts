/**
 * Progress notes are not answers (docs/protocol.md §4). An agent that says "working on it"
 * with `send_message { progress: true }` still owes the answer: a daemon SIGKILLed after the
 * note runs the mention again after its restart, and a turn that ends with only a note and
 * its final text gets the reply fallback. Judged from the channel (kit/channel-oracle.ts).
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { World } from "../kit/world.js";
import { ask, assertAnsweredOnce } from "../kit/channel-oracle.js";
import { isProgressNote } from "../src/nostr/events.js";
import { KIND } from "../src/nostr/kinds.js";

const worlds: World[] = [];
after(async () => {
  for (const w of worlds) await w.close();
});

test("SIGKILL after the agent's progress note: after the restart the real answer arrives, exactly once", { timeout: 120_000 }, async () => {
  const w = await World.create();
  worlds.push(w);
  let d = await w.startDaemon({ log: { level: "info" } });
  const asked = await ask(w.owner, "#progress #slow 8000 migrate the database", { channel: w.channel });
  await w.waitEvents({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [asked.event.id] }, (evs) => evs.some(isProgressNote), 30_000);
  d.proc.kill("SIGKILL");
  await d.exited;
  d = await w.startDaemon({}, { configFile: d.configFile });
  await d.waitLog((l) => l.evt === "turn.end", 60_000);
  const v = await assertAnsweredOnce(w, [asked], { timeoutMs: 30_000 });
  assert.equal(v.progress, 2, "one progress note from each run of the turn, neither taken for the answer");
  assert.equal(d.logs.filter((l) => l.evt === "turn.already_answered").length, 0, "the note did not count as the answer after the restart");
});

test("a turn that posted only a progress note and ended with its final text: the fallback posts that text as the answer", {
  timeout: 90_000,
}, async () => {
  const w = await World.create();
  worlds.push(w);
  const d = await w.startDaemon({ log: { level: "info" } });
  const asked = await ask(w.owner, "#progress #final-only how is the build", { channel: w.channel });
  const end = await d.waitLog((l) => l.evt === "turn.end", 60_000);
  assert.equal(end.via, "fallback");
  const v = await assertAnsweredOnce(w, [asked], { timeoutMs: 30_000 });
  assert.equal(v.progress, 1);
});
