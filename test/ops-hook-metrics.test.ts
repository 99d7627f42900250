/**
 * `/metrics` counts the proxy's hook fan-outs (`proxy_hook_fanouts_total`, by hook and merged
 * verdict, and `proxy_hook_duration_seconds`): each merged `_Stop` the proxy answers is counted
 * once, whether the bridge asked for it (`gates.enforce: bridge`) or the agent called it
 * itself (`gates.enforce: agent`). A gate that objects once, then allows.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { World, type DaemonProc } from "../kit/world.js";
import { gateServer } from "./fixtures/gates-helpers.js";

let w: World;
before(async () => {
  w = await World.create({ channelName: "hook-metrics-room" });
});
after(() => w.close());

const config = (enforce: "bridge" | "agent") => ({
  http: { listen: "127.0.0.1:0" },
  relay: { presence: false },
  gates: { enforce },
  mcp: { servers: { ci: gateServer({ GATE_STOP_TEXT: "CI is red: run #7 failed.", GATE_OBJECT_TIMES: "1" }) } },
  defaults: { mcp: ["ci"] },
});

async function metrics(d: DaemonProc): Promise<string> {
  const base = String(d.logs.find((l) => l.evt === "daemon.started")?.http);
  return (await fetch(`${base}/metrics`)).text();
}

/** A mention in a channel of its own, answered (✅) and its turn ended. */
async function answered(d: DaemonProc, text: string): Promise<void> {
  const channel = await w.addChannel({ name: `room-${Math.random().toString(36).slice(2, 8)}` });
  await d.waitLog((l) => l.evt === "relay.channel_joined" && l.channel === channel);
  const ev = await w.owner.post(text, { channel });
  await w.waitReaction(ev, "✅", 40_000);
  await d.waitLog((l) => l.evt === "turn.end", 40_000);
}

test("enforce: bridge — the bridge's _Stop rounds are counted: one objection, then one allow", { timeout: 90_000 }, async () => {
  const d = await w.startDaemon(config("bridge"));
  await answered(d, "@agent ship it");
  const text = await metrics(d);
  assert.match(text, /^buzz_bridge_proxy_hook_fanouts_total\{hook="_Stop",verdict="object"\} 1$/m);
  assert.match(text, /^buzz_bridge_proxy_hook_fanouts_total\{hook="_Stop",verdict="allow"\} 1$/m);
  assert.match(text, /^buzz_bridge_proxy_hook_duration_seconds_count\{hook="_Stop"\} 2$/m);
  await d.stop();
});

test("enforce: agent — a _Stop the agent calls itself is counted too", { timeout: 90_000 }, async () => {
  const d = await w.startDaemon(config("agent"));
  await answered(d, "@agent #stop-hook ship it");
  const text = await metrics(d);
  assert.match(text, /^buzz_bridge_proxy_hook_fanouts_total\{hook="_Stop",verdict="object"\} 1$/m);
  assert.match(text, /^buzz_bridge_proxy_hook_duration_seconds_count\{hook="_Stop"\} 1$/m);
  await d.stop();
});
