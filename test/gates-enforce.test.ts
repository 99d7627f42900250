/**
 * `gates.enforce`, one daemon per mode, each with a gate that objects: `off` runs no
 * rounds; `agent` leaves hooks to the agent (MCP_HOOK_SERVERS=buzz names the proxy entry,
 * and the merged `_Stop` is there for an agent that calls it) and the bridge runs no
 * rounds; `auto` with an agent that does not call hooks itself (the demo agent) is `bridge`.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { World, type DaemonProc } from "../kit/world.js";
import { gateServer, lines } from "./fixtures/gates-helpers.js";

let w: World;

before(async () => {
  w = await World.create({ channelName: "enforce-room" });
});
after(() => w.close());

const ci = (env: Record<string, string> = {}) => ({
  mcp: { servers: { ci: gateServer({ GATE_STOP_TEXT: "CI is red: run #7 concluded failure.", ...env }) } },
});

/** A mention in a channel of its own (no other test's messages in its history), answered. */
async function answered(d: DaemonProc, text: string) {
  const channel = await w.addChannel({ name: `room-${Math.random().toString(36).slice(2, 8)}` });
  await d.waitLog((l) => l.evt === "relay.channel_joined" && l.channel === channel);
  const mark = d.logs.length;
  const ev = await w.owner.post(text, { channel });
  // With a re-prompt the agent replies twice; the newest may answer the objection. The
  // answer to the mention itself is the one whose "Asked:" line quotes it.
  const asked = (m: { content: string }) => m.content.includes(`Asked: ${text}`);
  const replies = await w.waitEvents({ kinds: [9], authors: [w.agent.pk], "#e": [ev.id] }, (e) => e.some(asked), 40_000);
  const reply = replies.find(asked);
  await w.waitReaction(ev, "✅", 40_000);
  const end = await d.waitLog((l) => l.evt === "turn.end" && d.logs.indexOf(l) >= mark, 40_000);
  const window = d.logs.slice(mark, d.logs.indexOf(end) + 1);
  return { reply: reply!, end, prompts: window.filter((l) => l.evt === "agent.turn_end").length, mark };
}

test("enforce: off — an objecting gate is not asked; the turn ends after one prompt", async () => {
  const d = await w.startDaemon({ ...ci(), gates: { enforce: "off" } });
  assert.equal((await d.waitLog((l) => l.evt === "daemon.started")).enforce, "off");
  const t = await answered(d, "@agent #env ship it");
  assert.equal(t.prompts, 1);
  assert.deepEqual(lines(d, t.mark, "gate.round"), []);
  assert.doesNotMatch(t.reply.content, /MCP_HOOK_SERVERS/, "no hook servers named to the agent");
  await d.stop();
});

test("enforce: agent — MCP_HOOK_SERVERS=buzz in the agent env, the merged _Stop reachable by the agent, no bridge rounds", async () => {
  const d = await w.startDaemon({ ...ci(), gates: { enforce: "agent" } });
  assert.equal((await d.waitLog((l) => l.evt === "daemon.started")).enforce, "agent");
  const t = await answered(d, "@agent #env #stop-hook ship it");
  assert.match(t.reply.content, /env names: .*\bMCP_HOOK_SERVERS\b/);
  assert.match(
    t.reply.content,
    /env names: .*\bBUZZ_AGENT_STOP_MAX_REJECTIONS\b/,
    "the agent's own rejection budget follows gates.max_rejections",
  );
  assert.match(
    t.reply.content,
    /_Stop: "\[ci\] CI is red: run #7 concluded failure\."/,
    "the proxy's merged _Stop, as an agent that calls hooks sees it",
  );
  assert.equal(t.prompts, 1);
  assert.deepEqual(lines(d, t.mark, "gate.round"), [], "the bridge leaves hooks to the agent");
  await d.stop();
});

test("enforce: auto with the demo agent (no hook support) — the bridge enforces", async () => {
  const d = await w.startDaemon({ ...ci({ GATE_OBJECT_TIMES: "1" }), gates: { enforce: "auto" } });
  assert.equal((await d.waitLog((l) => l.evt === "daemon.started")).enforce, "bridge");
  const t = await answered(d, "@agent #env ship it");
  assert.doesNotMatch(t.reply.content, /MCP_HOOK_SERVERS/);
  const rs = lines(d, t.mark, "gate.round");
  assert.deepEqual(
    rs.map((r) => r.verdict),
    ["object", "allow"],
  );
  assert.equal(t.prompts, 2, "one re-prompt for the one objection");
  await d.stop();
});
