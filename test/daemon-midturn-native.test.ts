/**
 * Native steering through the real daemon: the demo agent advertises `_session/steering`
 * (DEMO_AGENT_STEERING=1), so a mid-turn message is put into the running prompt without a
 * cancel, and the turn answers once with both in mind.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { World, type DaemonProc } from "../kit/world.js";

let w: World;
let d: DaemonProc;

before(async () => {
  w = await World.create({ channelName: "native-steer-room" });
  d = await w.startDaemon({
    defaults: { respond_to: "allowlist", allow: [w.teammate.npub] },
    agent: { env: { DEMO_AGENT_STEERING: "1" } },
  });
});
after(() => w.close());

test("steer with an agent that advertises _session/steering: the message goes into the running turn natively, no cancel; one reply covers both", async () => {
  const from = d.logs.length;
  const first = await w.owner.post("@agent #slow 3000 refactor the build");
  await d.waitLog((l) => d.logs.indexOf(l) >= from && l.evt === "agent.turn_start");
  const second = await w.teammate.post("@agent also use the staging branch", { replyTo: first });
  const line = await d.waitLog((l) => l.evt === "turn.steered" && (l.events as string[]).includes(second.id));
  assert.equal(line.method, "native");
  // Both messages' turn ended; then exactly one agent message in the thread, under the steered one.
  const [reply] = await w.waitThread(first, 1, { mentions: [first, second], timeoutMs: 30_000 });
  assert.equal(reply!.tags.find((t) => t[0] === "e" && t[3] === "reply")?.[1], second.id, "the reply answers the latest message");
  assert.match(reply!.content, /Asked: @agent #slow 3000 refactor the build/, "the original request was finished, not restarted");
  assert.match(reply!.content, /Steered in at \d{4}-\d\d-\d\dT[\d:.]+Z: @agent also use the staging branch/);
  assert.ok(!d.logs.slice(from).some((l) => l.evt === "agent.turn_cancel"), "no session/cancel was sent");
  await w.waitReaction(second, "👀");
});

test("an agent that advertises steering but refuses the steer: logged, then cancel-and-merge; still one reply", async () => {
  const w2 = await World.create({ channelName: "refusing-room" });
  try {
    const d2 = await w2.startDaemon({ agent: { env: { DEMO_AGENT_STEERING: "refuse" } } });
    const first = await w2.owner.post("@agent #slow 20000 refactor the build");
    await d2.waitLog((l) => l.evt === "agent.turn_start");
    const second = await w2.owner.post("@agent also use the staging branch", { replyTo: first });
    const refused = await d2.waitLog((l) => l.evt === "turn.steer_refused" && (l.events as string[]).includes(second.id));
    assert.equal(refused.answer, "refused");
    const line = await d2.waitLog((l) => l.evt === "turn.steered" && (l.events as string[]).includes(second.id));
    assert.equal(line.method, "cancel-merge");
    const [reply] = await w2.waitThread(first, 1, { mentions: [first, second], timeoutMs: 30_000 });
    assert.match(reply!.content, /Asked: @agent also use the staging branch/);
  } finally {
    await w2.close();
  }
});
