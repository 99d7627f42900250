/**
 * Reliability (issue 10): `buzz-bridge run` against a hostile relay that, once the daemon
 * has subscribed, sends 5,000 malformed frames and events on its channel subscription —
 * invalid JSON, unknown message types, wrong ids, bad signatures (some claiming the
 * owner, one a forged `!shutdown`), 300 KB content, 10,000 tags, control characters.
 * The daemon must stay up, never prompt the agent, keep its memory bounded, and log the
 * rejections without one line per bad frame.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Event } from "nostr-tools";
import { finalizeEvent } from "nostr-tools/wasm";
import { World, type DaemonProc } from "./fixtures/world.js";
import { hostileFrames, startHostileRelay, type HostileRelay } from "./fixtures/hostile-relay.js";
import { initCrypto } from "../src/relay/verify.js";
import { leakedSecrets } from "./reliability-helpers.js";

const FRAMES = 5000;
let w: World;
let hostile: HostileRelay;
let d: DaemonProc;
const channel = randomUUID();

const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;

before(async () => {
  await initCrypto();
  w = await World.create();
  hostile = await startHostileRelay({ channel, name: "hostile-room", about: "A relay that lies", members: [w.agent.pk, w.owner.pk, w.stranger.pk] });
  d = await w.startDaemon({ relay: { url: hostile.url }, log: { level: "info" } });
});
after(async () => {
  await w.close();
  await hostile.close();
});

test(`${FRAMES} malformed frames and forged events: no crash, no dispatch, bounded memory, rejections logged but rate-limited`, { timeout: 80_000 }, async () => {
  const sub = await hostile.subscribed();
  const pid = d.proc.pid!;
  const rssBefore = rssMiB(pid);
  const linesBefore = d.logs.length;
  const frames = hostileFrames({ sub, channel, agent: w.agent.pk, owner: w.owner.pk, strangerSk: w.stranger.sk, total: FRAMES });
  for (let i = 0; i < frames.length; i += 500) await hostile.send(frames.slice(i, i + 500));
  // A sentinel after the flood, on the same socket: once the gate has decided it, every frame before it was handled.
  const sentinel = JSON.parse(JSON.stringify(finalizeEvent({ kind: 9, created_at: Math.floor(Date.now() / 1000), content: "@agent sentinel", tags: [["h", channel], ["p", w.agent.pk]] }, w.stranger.sk))) as Event;
  await hostile.send([JSON.stringify(["EVENT", sub, sentinel])]);
  await d.waitLog((l) => l.evt === "gate.denied" && l.event === sentinel.id, 60_000);

  assert.equal(d.proc.exitCode, null, "the daemon is still running");
  assert.equal(d.proc.signalCode, null);
  const dispatched = d.logs.filter((l) => ["gate.accepted", "agent.session_open", "turn.session", "turn.end", "daemon.stopping"].includes(String(l.evt)));
  assert.deepEqual(dispatched, [], "nothing was dispatched to the agent and the forged !shutdown did nothing");

  const forged = d.logs.filter((l) => l.evt === "gate.denied" && l.reason === "bad-signature");
  assert.ok(forged.length > 0, "events claiming the owner with a bad signature are denied as bad-signature");
  assert.ok(forged.every((l) => l.level === "info"), "denials are info lines");
  assert.ok(forged.length <= 20, `forged-signature denials are rate-limited (${forged.length} lines; the rest are counted when the minute ends)`);
  const invalid = d.logs.filter((l) => l.evt === "relay.invalid_frame");
  assert.ok(invalid.length > 0 && invalid.length <= 10, `invalid frames are logged, rate-limited (${invalid.length} lines)`);
  const newLines = d.logs.length - linesBefore;
  assert.ok(newLines < FRAMES, `fewer log lines than bad frames (${newLines} for ${FRAMES})`);
  assert.ok(!d.logs.some((l) => JSON.stringify(l).length > 20_000), "no log line carries a 300 KB payload");

  const rssAfter = rssMiB(pid);
  if (process.env.RELIABILITY_DEBUG) console.log({ rssBefore, rssAfter, newLines, forged: forged.length, invalid: invalid.length, denied: d.logs.filter((l) => l.evt === "gate.denied").length, evts: [...new Set(d.logs.map((l) => l.evt))], conns: hostile.stats() });
  assert.ok(rssAfter < 400, `daemon RSS stays bounded: ${rssBefore.toFixed(0)} → ${rssAfter.toFixed(0)} MiB`);

  assert.deepEqual(leakedSecrets(d.raw(), [w.agent, w.owner, w.teammate, w.stranger]), [], "no secret in the daemon's output");
});
