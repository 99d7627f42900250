/**
 * The relay goes away while the agent works (docs/protocol.md §5): its `send_message`
 * waits for the relay, bounded by the turn, instead of failing within seconds and leaving
 * the agent to post its error text. The dev relay stops listening mid-turn and comes back;
 * judged from the channel (kit/channel-oracle.ts) and from the order of the log.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { World } from "../kit/world.js";
import { ask, assertAnsweredOnce } from "../kit/channel-oracle.js";

let w: World | undefined;
after(async () => {
  await w?.relay.resume();
  await w?.close();
});

test("the relay stops while the agent is about to answer: send_message waits for it, and the answer (not an error) arrives once", {
  timeout: 120_000,
}, async () => {
  w = await World.create();
  const d = await w.startDaemon();
  const asked = await ask(w.owner, "#slow 5000 summarise the release notes", { channel: w.channel });
  await d.waitLog((l) => l.evt === "agent.turn_start", 60_000);
  await w.relay.suspend();
  const wait = await d.waitLog((l) => l.evt === "link.relay_wait", 60_000);
  assert.equal(wait.tool, "read", "send_message first reads the message it replies to");
  await w.relay.resume();
  const back = await d.waitLog((l) => l.evt === "link.relay_back", 60_000);
  assert.equal(back.ok, true);
  const end = await d.waitLog((l) => l.evt === "turn.end", 90_000);
  assert.equal(end.status, "answered");
  assert.equal(end.via, "tool", "the agent's own send_message went through");
  assert.ok(d.logs.indexOf(wait) < d.logs.indexOf(back) && d.logs.indexOf(back) < d.logs.indexOf(end));
  await assertAnsweredOnce(w, [asked], { timeoutMs: 30_000 });
});
