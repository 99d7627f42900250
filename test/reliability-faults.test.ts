/**
 * Reliability (issue 10): agent and MCP faults under load. While the owner posts 50
 * mentions, one of them makes the agent process crash mid-turn (`#crash`, in a channel of
 * its own so it is not batched away), and every session's downstream MCP server (the
 * gate fixture) crashes on its second call and is restarted by the proxy. Every mention
 * must end answered or reported with a failure notice; none lost, none answered twice.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { REPO, World, type DaemonProc } from "./fixtures/world.js";
import { assertCoveredOnce, leakedSecrets, storedTurns } from "./reliability-helpers.js";

const MENTIONS = 50;
const GATE = join(REPO, "test", "fixtures", "gate-server.mjs");

let w: World;
let d: DaemonProc;
let busy: string[];
let crashRoom: string;
let counter: string;

before(async () => {
  w = await World.create({ channelName: "room-a" });
  busy = [w.channel, await w.addChannel({ name: "room-b" })];
  crashRoom = await w.addChannel({ name: "room-crash" });
  counter = join(w.dir, "gate-calls.txt");
  d = await w.startDaemon({
    agent: { max_concurrent: 4, session_scope: "channel" },
    mcp: { servers: { gate: { command: process.execPath, args: [GATE], env: { GATE_CRASH_AFTER: "2", GATE_COUNTER_FILE: counter } } } },
    defaults: { mcp: ["gate"] },
    log: { level: "info" },
  });
});
after(() => w.close());

test(`${MENTIONS} mentions with an agent crash and downstream MCP crashes: all answered or reported, none lost`, { timeout: 85_000 }, async () => {
  const mentions: Event[] = [];
  let crasher: Event | undefined;
  for (let i = 0; i < MENTIONS; i++) {
    if (i === Math.floor(MENTIONS / 2)) {
      crasher = await w.owner.post(`@agent ping m${i} #crash`, { channel: crashRoom });
      mentions.push(crasher);
      continue;
    }
    mentions.push(await w.owner.post(`@agent ping m${i}\n#tool gate_sleep {"ms":1}\n#tool gate_sleep {"ms":1}\n#tool gate_sleep {"ms":1}`, { channel: busy[i % busy.length] }));
    await new Promise((r) => setTimeout(r, 40));
  }

  const { notices } = await assertCoveredOnce(w, [...busy, crashRoom], mentions, 75_000);
  const turns = await storedTurns(w);
  const crashTurn = turns.find((t) => t.trigger_ids.includes(crasher!.id))!;
  assert.equal(crashTurn.state, "failed", "the crashing mention ends failed …");
  assert.ok(notices >= 1, "… with a failure notice in its thread");
  assert.ok(d.logs.some((l) => l.evt === "turn.end" && l.status === "failed"), "the crash was seen as a failed turn");
  assert.ok(turns.some((t) => t.state === "done" && t.trigger_ids.some((id) => mentions.some((m) => m.id === id && m.created_at >= crasher!.created_at))), "mentions after the crash are answered");

  assert.ok(existsSync(counter), "the gate server was called");
  const calls = readFileSync(counter, "utf8").trim().split("\n");
  const pids = new Set(calls.map((l) => l.split(" ")[1]));
  assert.ok(pids.size >= 2, `more than one gate process served the calls (${calls.length} calls, ${pids.size} processes)`);
  assert.match(d.raw(), /proxy\.server_(down|restart)/, "the proxy saw its downstream server crash and restarted it");
  assert.equal(d.proc.exitCode, null, "the daemon survived");
  assert.deepEqual(leakedSecrets(d.raw(), [w.agent, w.owner, w.teammate, w.stranger]), [], "no secret in the daemon's output");
});
