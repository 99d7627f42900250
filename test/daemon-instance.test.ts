/**
 * One daemon per identity across machines (buzz/instance.ts): each daemon announces itself
 * on the relay with a beacon signed by the identity. A second daemon of the identity with a
 * state directory of its own (another machine, or `run` as root beside the service) refuses
 * to start and names the first one's host and pid; a running daemon that sees an instance
 * that started earlier stops answering and says so, one that started later is told to
 * stop; a fleet's daemons (`state.backend: postgres`) recognise each other. Judged from the
 * channel (kit/channel-oracle.ts): every mention answered exactly once.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { hostname } from "node:os";
import { join } from "node:path";
import { nip44 } from "nostr-tools";
import { useFleet } from "./fixtures/fleet.js";
import { World } from "../kit/world.js";
import { ask, assertAnsweredOnce } from "../kit/channel-oracle.js";
import { Publisher } from "../src/relay/publisher.js";
import { beaconTemplate, InstanceBeacon, type InstanceInfo } from "../src/buzz/instance.js";
import { KIND } from "../src/nostr/kinds.js";
import { nowSec } from "../src/base/time.js";
import { randomUUID } from "node:crypto";
import { createLogger } from "../src/base/log.js";

const fleet = useFleet({ channels: ["ops-room"] });
// Each test judges the whole relay (kit/channel-oracle.ts): a world of its own each.
const worlds: World[] = [];
after(async () => {
  for (const w of worlds) await w.close();
});
async function world(): Promise<World> {
  const w = await World.create();
  worlds.push(w);
  return w;
}

/** Each beacon the test publishes is a second later than the last, as a daemon's are (see beaconTemplate). */
let lastCreated = 0;
/** Publishes a beacon as another daemon of the agent's identity would (the test holds the key). */
async function otherDaemonSays(w: World, info: Omit<InstanceInfo, "state">, state: InstanceInfo["state"] = "running"): Promise<void> {
  const key = nip44.getConversationKey(w.agent.sk, w.agent.pk);
  lastCreated = Math.max(nowSec(), lastCreated + 1);
  const { outcome } = await (await w.agent.relay()).send(beaconTemplate({ ...info, state }, key, lastCreated));
  assert.equal(outcome.status, "accepted", "the dev relay stores the beacon");
}

test("a second daemon of one identity with its own state directory refuses to start, naming the first; every mention is answered exactly once", {
  timeout: 120_000,
}, async () => {
  const w = await world();
  const first = await w.startDaemon({ state_dir: join(w.dir, "state-a"), log: { level: "info" } });
  const second = await w.startDaemon({ state_dir: join(w.dir, "state-b"), log: { level: "info" } }, { waitStarted: false });
  // Either it refuses, or (without the beacon) it starts: the channel decides below.
  await second.waitLog((l) => l.evt === "instance.conflict" || l.evt === "daemon.started", 60_000);
  const asked = [];
  for (const text of ["deploy the api", "rotate the logs", "check the backups"])
    asked.push(await ask(w.owner, text, { channel: w.channel }));
  await assertAnsweredOnce(w, asked, { timeoutMs: 60_000 });
  const conflict = second.logs.find((l) => l.evt === "instance.conflict");
  assert.ok(conflict, "the second daemon logged instance.conflict");
  assert.equal(conflict.action, "refused-start");
  const other = conflict.other as Record<string, unknown>;
  assert.equal(other.pid, first.proc.pid, "it names the first daemon's pid, as announced");
  assert.equal(other.host, hostname());
  assert.equal(await second.exited, 2, "and exits 2 without listening");
  assert.equal(second.logs.filter((l) => l.evt === "daemon.started").length, 0);
  assert.equal(await first.stop(), 0);
});

test("a daemon that stops within the second it started leaves a stopped beacon: the next daemon of the identity starts", {
  timeout: 60_000,
}, async () => {
  const w = await world();
  const relay = await w.agent.relay();
  // Eight quick starts and stops: with a "stopped" in the second of its "running", a relay keeps
  // the lower id of the two (NIP-01), so half of them would look alive for 90 s.
  for (let i = 0; i < 8; i++) {
    const beacon = new InstanceBeacon({
      relay,
      publisher: new Publisher({ relay, logger: createLogger({ level: "silent" }) }),
      secretKey: w.agent.sk,
      pubkey: w.agent.pk,
      instance: randomUUID(),
      logger: createLogger({ level: "silent" }),
      onLost: () => assert.fail("no other instance is running"),
    });
    await beacon.claim(); // throws InstanceConflictError when an earlier one still looks alive
    await beacon.stop();
  }
  const key = nip44.getConversationKey(w.agent.sk, w.agent.pk);
  const kept = await w.query({ kinds: [KIND.appData], authors: [w.agent.pk] });
  const states = kept.map((ev) => (JSON.parse(nip44.decrypt(ev.content, key)) as InstanceInfo).state);
  assert.deepEqual(states, Array(8).fill("stopped"), "the relay keeps each instance's stopped beacon");
});

test("a running daemon that sees another instance: a later one is told to stop and it goes on; an earlier one makes it stop answering until it is gone", {
  timeout: 180_000,
}, async () => {
  const w = await world();
  let d = await w.startDaemon({ state_dir: join(w.dir, "state-c"), log: { level: "info" } });
  const started = nowSec();
  const later = { instance: "00000000-0000-4000-8000-00000000000b", host: "later-host", pid: 4242, started_at: started + 100 };
  await otherDaemonSays(w, later);
  const told = await d.waitLog((l) => l.evt === "instance.conflict");
  assert.equal(told.action, "continuing");
  assert.equal((told.other as Record<string, unknown>).host, "later-host");
  const whileLater = await ask(w.owner, "still there?", { channel: w.channel });
  await assertAnsweredOnce(w, [whileLater], { timeoutMs: 60_000 });
  await otherDaemonSays(w, later, "stopped");

  const earlier = { instance: "00000000-0000-4000-8000-00000000000a", host: "earlier-host", pid: 4343, started_at: started - 100 };
  await otherDaemonSays(w, earlier);
  const gave = await d.waitLog((l) => l.evt === "instance.conflict" && l.action === "stopping");
  assert.equal((gave.other as Record<string, unknown>).host, "earlier-host");
  assert.equal(await d.exited, 2, "it stops with exit 2, so Restart=on-failure starts it again and that start decides anew");
  const meanwhile = await ask(w.owner, "anyone?", { channel: w.channel });
  // The earlier one goes away (a graceful stop says so); this daemon starts again and answers what was missed.
  await otherDaemonSays(w, earlier, "stopped");
  const unanswered = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [meanwhile.event.id] });
  assert.equal(unanswered.length, 0, "nobody answered while this daemon had given way");
  d = await w.startDaemon({}, { configFile: d.configFile });
  await assertAnsweredOnce(w, [whileLater, meanwhile], { timeoutMs: 60_000 });
  await d.stop();
});

test("a fleet of two daemons of one identity (state.backend: postgres) recognise each other: both run, no conflict, each mention answered once", {
  timeout: 120_000,
}, async (ctx) => {
  if (fleet.skip) return ctx.skip(fleet.skip);
  const { env } = await fleet.database();
  const daemons = await fleet.start(
    fleet.configs(2, () => ({ log: { level: "info" } }), "fleet"),
    env,
  );
  const asked = [];
  for (const text of ["build it", "ship it", "tag it"]) asked.push(await ask(fleet.w.owner, text, { channel: fleet.w.channel }));
  await assertAnsweredOnce(fleet.w, asked, { timeoutMs: 60_000 });
  for (const d of daemons) assert.equal(d.logs.filter((l) => l.evt === "instance.conflict").length, 0, "no instance.conflict in a fleet");
});
