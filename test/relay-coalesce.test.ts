/**
 * The daemon's channel subscription costs a handful of frames however many channels it
 * listens in, measured between the running daemon and the relay through a frame-counting
 * proxy: the relay admits about 50 frames per 5 s per connection (docs/protocol.md, "Limits").
 */
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startFrameProxy, type FrameProxy } from "./fixtures/frame-proxy.js";
import { World, type DaemonProc } from "./fixtures/world.js";
import { sleep } from "./fixtures/wait.js";

let w: World;
let proxy: FrameProxy;
let daemon: DaemonProc;
const channels: string[] = [];
const later: string[] = [];

before(async () => {
  w = await World.create();
  for (let i = 0; i < 500; i++) channels.push(await w.relay.createChannel({ name: `room-${i}`, members: [w.agent.pk, w.owner.pk] }));
  for (let i = 0; i < 100; i++) later.push(await w.relay.createChannel({ name: `later-${i}`, members: [w.owner.pk] }));
  proxy = await startFrameProxy(w.relay.url);
});

after(async () => {
  await w.close();
  await proxy.close();
});

test("the daemon subscribes 501 channels with at most 3 REQ frames and answers a mention in any of them", async () => {
  daemon = await w.startDaemon({ relay: { url: proxy.url } });
  // Joins replayed from the membership notifications (all of them are seconds old) and the
  // discovery both land inside the coalescing window; give stragglers time to show.
  await sleep(2500);
  const reqs = proxy.count("REQ");
  assert.ok(reqs <= 3, `the daemon sent ${reqs} REQ frames to subscribe 501 channels`);
  assert.equal(proxy.refused.length, 0, `the relay refused: ${JSON.stringify(proxy.refused.slice(0, 3))}`);
  const ev = await w.owner.post("@agent are you in room 437?", { channel: channels[437] });
  const reply = await w.waitReply(ev, 30_000);
  assert.ok(reply, "the mention in room 437 was answered");
});

test("100 channels joined within a second are subscribed with at most 2 replacement REQ frames", async () => {
  assert.ok(daemon, "needs the running daemon of the previous test");
  const t0 = Date.now();
  for (const id of later) {
    await w.relay.addMember(id, w.agent.pk);
    await sleep(8); // paced: 100 joins spread over about a second, as the test name says
  }
  const joinMs = Date.now() - t0;
  await sleep(2500); // a straggling REQ frame would show up by now
  const reqs = proxy.count("REQ", t0);
  assert.ok(reqs <= 2, `100 joins in ${joinMs} ms cost ${reqs} REQ frames`);
  assert.equal(proxy.refused.length, 0, `the relay refused: ${JSON.stringify(proxy.refused.slice(0, 3))}`);
  const ev = await w.owner.post("@agent welcome to the last room", { channel: later[99] });
  const reply = await w.waitReply(ev, 30_000);
  assert.ok(reply, "a mention in the last joined channel was answered");
});

test("after the relay drops the connection, the daemon resubscribes its 601 channels in at most 3 REQ frames", async () => {
  assert.ok(daemon, "needs the running daemon of the previous tests");
  const t0 = Date.now();
  w.relay.dropAll();
  await daemon.waitLog((l) => l.evt === "relay.authenticated" && (l.time as number) >= t0, 30_000);
  await sleep(2500); // a straggling REQ frame would show up by now
  const reqs = proxy.count("REQ", t0);
  assert.ok(reqs <= 3, `the resubscription cost ${reqs} REQ frames`);
  assert.equal(proxy.refused.length, 0);
  const ev = await w.owner.post("@agent still there?", { channel: channels[12] });
  const reply = await w.waitReply(ev, 30_000);
  assert.ok(reply, "a mention after the reconnect is answered");
});
