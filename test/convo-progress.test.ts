/**
 * "Still working": a turn that runs past `progress.after` gets one note in its thread naming
 * the agent's current tool call (its kind only, by default), and the note is gone once the turn has answered.
 * End to end through the daemon subprocess, the demo agent (`#busy`) and the dev relay.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { World } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";

let w: World;

before(async () => {
  w = await World.create();
  await w.startDaemon({ progress: { after: "1s" } });
});
after(() => w.close());

test('a long turn gets one redacted "still working" note, removed when the answer is there', async () => {
  const ev = await w.owner.post("@agent #busy 6000 run the test suite");
  const inThread = { kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] };
  const [note] = await w.waitEvents(inThread, (e) => e.some((m) => /Still working/.test(m.content)));
  assert.equal(note!.content, "Still working on this — now: shell", "the tool's kind only (tool_titles: brief)");
  assert.ok(
    note!.tags.some((t) => t[0] === "buzz" && t[1] === "progress"),
    "marked as no answer",
  );
  await w.waitReaction(ev, "✅");
  const left = await w.waitEvents(inThread, (e) => !e.some((m) => m.id === note!.id));
  assert.equal(left.length, 1, "the answer alone stays in the thread");
  assert.match(left[0]!.content, /Demo agent/);
});

test("a turn shorter than progress.after gets no note", async () => {
  const ev = await w.owner.post("@agent quick one");
  await w.waitReaction(ev, "✅");
  const mine = await w.query({ kinds: [KIND.message, KIND.edit, KIND.deletion], authors: [w.agent.pk], "#e": [ev.id] });
  assert.deepEqual(
    mine.map((m) => m.kind),
    [KIND.message],
    "only the answer: no note was posted (and so none edited or deleted)",
  );
});
