/**
 * The daemon's channel subscription costs a handful of frames however many channels it
 * listens in, measured between the running daemon and the relay through a frame-counting
 * proxy: the relay admits about 50 frames per 5 s per connection (docs/protocol.md, "Limits").
 * Each test runs a daemon of its own and counts the frames it sent until a REQ naming every
 * channel went out (the subscription is complete: nothing is left to send); the timing of
 * the coalescing windows is relay-units' (mock timers), not this file's.
 */
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { startFrameProxy, type FrameProxy } from "../kit/frame-proxy.js";
import { World, type DaemonProc } from "../kit/world.js";
import { waitFor } from "../kit/wait.js";

let w: World;
let proxy: FrameProxy;
const channels: string[] = [];
let runs = 0;

before(async () => {
  w = await World.create();
  for (let i = 0; i < 500; i++) channels.push(await w.relay.createChannel({ name: `room-${i}`, members: [w.agent.pk, w.owner.pk] }));
  proxy = await startFrameProxy(w.relay.url);
});

after(async () => {
  await w.close();
  await proxy.close();
});

/** A daemon of the test's own (its own state) behind the frame proxy; stopped when the test ends. */
async function ownDaemon(t: { after(fn: () => Promise<unknown>): void }): Promise<DaemonProc> {
  const d = await w.startDaemon({ relay: { url: proxy.url }, state_dir: join(w.dir, `state-${++runs}`) });
  t.after(() => d.stop());
  return d;
}

/** Waits for a REQ sent at or after `since` that names every one of `ids`; returns it. */
function subscribedTo(ids: string[], since: number) {
  const want = new Set(ids);
  return waitFor(
    () => proxy.sent.find((f) => f.type === "REQ" && f.at >= since && f.channels && [...want].every((id) => f.channels!.includes(id))),
    { timeoutMs: 30_000, what: `a REQ naming all ${ids.length} channels` },
  );
}

test("the daemon subscribes 500 channels with a handful of REQ frames, not one each, and answers a mention in any of them", async (t) => {
  const t0 = Date.now();
  await ownDaemon(t);
  await subscribedTo(channels, t0);
  const reqs = proxy.count("REQ", t0);
  // Two for the daemon's other subscriptions, then a frame per quiet or deadline window of the
  // coalescer (relay-units) while the 500 memberships stream in: one on an idle machine, two
  // when a loaded one streams them past a deadline. One per channel is 500.
  assert.ok(reqs <= 5, `the daemon sent ${reqs} REQ frames to subscribe 500 channels`);
  assert.equal(proxy.refused.length, 0, `the relay refused: ${JSON.stringify(proxy.refused.slice(0, 3))}`);
  const ev = await w.owner.post("@agent are you in room 437?", { channel: channels[437] });
  await w.waitReply(ev, 30_000);
});

test("100 channels joined in a burst are subscribed with a handful of replacement REQ frames, not one each", async (t) => {
  const later: string[] = [];
  for (let i = 0; i < 100; i++) later.push(await w.relay.createChannel({ name: `later-${runs}-${i}`, members: [w.owner.pk] }));
  const t0 = Date.now();
  await ownDaemon(t);
  await subscribedTo(channels, t0);
  const t1 = Date.now();
  for (const id of later) await w.relay.addMember(id, w.agent.pk);
  await subscribedTo(later, t1);
  const reqs = proxy.count("REQ", t1);
  // A frame per quiet or deadline window of the coalescer (relay-units), not a frame per join.
  assert.ok(reqs <= 5, `100 joins cost ${reqs} REQ frames`);
  assert.equal(proxy.refused.length, 0, `the relay refused: ${JSON.stringify(proxy.refused.slice(0, 3))}`);
  const ev = await w.owner.post("@agent welcome to the last room", { channel: later[99] });
  await w.waitReply(ev, 30_000);
});

test("after the relay drops the connection, the daemon resubscribes all its channels in at most 3 REQ frames", async (t) => {
  const t0 = Date.now();
  const d = await ownDaemon(t);
  await subscribedTo(channels, t0);
  const t1 = Date.now();
  w.relay.dropAll();
  await d.waitLog((l) => l.evt === "relay.authenticated" && (l.time as number) >= t1, 30_000);
  await subscribedTo(channels, t1);
  const reqs = proxy.count("REQ", t1);
  assert.ok(reqs <= 3, `the resubscription cost ${reqs} REQ frames`);
  assert.equal(proxy.refused.length, 0);
  const ev = await w.owner.post("@agent still there?", { channel: channels[12] });
  await w.waitReply(ev, 30_000);
});
