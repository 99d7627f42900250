/**
 * Living within the relay's frame quota (docs/protocol.md, "Limits"): a burst of mentions
 * costs the daemon no refused frame on a relay enforcing Buzz's quota, every mention is
 * answered once in its own thread, and a relay stricter than it says still gets every reply.
 *
 * The burst and the refused-reply tests share one world on Buzz's own limits, one frame
 * proxy and one daemon (daemon starts are what this file spends most on), made by whichever
 * of them runs first; each uses channels of its own and counts the proxy's frames and the
 * daemon's log lines from its own start, so it passes alone and in either order.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import { FrameBudget } from "../src/relay/frame-budget.js";
import { startFrameProxy, type FrameProxy, type Intercept } from "../kit/frame-proxy.js";
import { World, type DaemonProc } from "../kit/world.js";
import { waitFor } from "../kit/wait.js";
import { nip11Document, type DevRelay } from "../src/devrelay/index.js";

/** The relay's real NIP-11 document with another frame quota stated in it. */
function lyingAbout(relay: DevRelay, rates: { frames: number; window_seconds: number }): Record<string, unknown> {
  const doc = nip11Document(relay.relayPubkey, relay.limits);
  return { ...doc, limitation: { ...(doc.limitation as object), rate_limits: { ...rates, per: "pubkey" } } };
}

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function burstWorld(
  relayLimits?: Parameters<typeof World.create>[0],
  intercept?: Intercept,
): Promise<{ w: World; proxy: FrameProxy; channels: string[] }> {
  const w = await World.create(relayLimits);
  const channels: string[] = [];
  for (let i = 0; i < 20; i++) channels.push(await w.addChannel({ name: `burst-${i}`, members: [w.agent, w.owner] }));
  const proxy = await startFrameProxy(w.relay.url, { intercept });
  cleanup.push(
    () => w.close(),
    () => proxy.close(),
  );
  return { w, proxy, channels };
}

interface SharedWorld {
  w: World;
  proxy: FrameProxy;
  channels: string[];
  d: DaemonProc;
  /** What the proxy answers in the relay's place (the refused-reply test sets it); forwarded when it returns false. */
  intercept: { fn?: Intercept };
}

let shared: Promise<SharedWorld> | undefined;
/** The world on Buzz's own limits, its proxy and its daemon, started once for the tests that share them. */
function sharedWorld(): Promise<SharedWorld> {
  shared ??= (async () => {
    const intercept: SharedWorld["intercept"] = {};
    const { w, proxy, channels } = await burstWorld(undefined, (f, answer) => intercept.fn?.(f, answer) ?? false);
    const d = await w.startDaemon({ relay: { url: proxy.url }, agent: { max_concurrent: 4 } });
    return { w, proxy, channels, d, intercept };
  })();
  return shared;
}

/** Each mention's turn ended, and then it has exactly one reply in its own thread (World.waitReply). */
async function everyMentionAnsweredOnce(w: World, mentions: Event[]): Promise<void> {
  for (const ev of mentions) await w.waitReply(ev, 60_000);
}

test("a burst of 20 owner mentions in 20 channels costs no refused frame and each is answered once", async () => {
  const { w, proxy, channels } = await sharedWorld();
  const sentFrom = proxy.sent.length;
  const refusedFrom = proxy.refused.length;
  const mentions = await Promise.all(channels.map((ch, i) => w.owner.post(`@agent burst ${i}`, { channel: ch })));
  await everyMentionAnsweredOnce(w, mentions);
  // ✅ is each turn's last frame (typing stops before it): once all are stored, nothing is on its way.
  for (const ev of mentions) await w.waitReaction(ev, "✅", 60_000);
  assert.deepEqual(proxy.refused.slice(refusedFrom), [], "the relay refused none of the daemon's frames");
  const sentIds = proxy.sent
    .slice(sentFrom)
    .filter((f) => f.type === "EVENT" && f.kind === 9)
    .map((f) => f.id);
  assert.equal(new Set(sentIds).size, 20, "20 replies went out");
});

test("a relay stricter than its stated quota still gets every reply, once", async () => {
  const { w, proxy, channels } = await burstWorld({ relayLimits: { frameQuota: { frames: 12, windowMs: 5000 } } });
  // The relay's NIP-11 claims Buzz's 50 per 5 s while it admits 12: its OK false answers are the truth.
  w.relay.setNip11({ document: lyingAbout(w.relay, { frames: 50, window_seconds: 5 }) });
  const d = await w.startDaemon({ relay: { url: proxy.url } });
  const mentions = await Promise.all(channels.slice(0, 8).map((ch, i) => w.owner.post(`@agent strict ${i}`, { channel: ch })));
  await everyMentionAnsweredOnce(w, mentions);
  assert.ok(proxy.refused.length > 0, "the relay did refuse frames below the daemon's budget");
  assert.ok(
    d.logs.some((l) => l.evt === "relay.rate_limited"),
    "the refusal was logged and backed off",
  );
});

test("the frame budget serves replies before reactions and drops typing when short", async () => {
  const b = new FrameBudget({ frames: 5, windowMs: 300 });
  const order: string[] = [];
  for (let i = 0; i < 5; i++) assert.equal(await b.acquire("durable"), true);
  assert.equal(await b.acquire("signal"), false, "typing is dropped, not queued, when the window is full");
  const done = [
    b.acquire("reaction").then(() => order.push("reaction")),
    b.acquire("durable").then(() => order.push("reply")),
    b.acquire("control").then(() => order.push("req")),
  ];
  await Promise.all(done);
  assert.deepEqual(order, ["req", "reply", "reaction"]);
  b.stop();
});

test("a rate-limited answer without a retry hint, and a refusal for a reason nobody knows: logged, backed off, one reply per mention", async () => {
  const { w, d, intercept } = await sharedWorld();
  // Channels of this test's own: the burst's channels are not refused.
  const mine = [await w.addChannel({ name: "refused-first", members: [w.agent, w.owner] })];
  const second = await w.addChannel({ name: "second", members: [w.agent, w.owner] });
  mine.push(second);
  const from = d.logs.length;
  const refused: string[] = [];
  // The first reply is answered `rate-limited` with no hint; the next one with an unknown reason.
  intercept.fn = (f, answer) => {
    const ev = f[0] === "EVENT" ? (f[1] as { id: string; kind: number; pubkey: string; tags: string[][] }) : undefined;
    if (ev?.kind !== 9 || ev.pubkey !== w.agent.pk || refused.length >= 2 || refused.includes(ev.id)) return false;
    if (!ev.tags.some((t) => t[0] === "h" && mine.includes(t[1]!))) return false;
    answer(["OK", ev.id, false, refused.length === 0 ? "rate-limited: slow down" : "mystery: the relay will not say why"]);
    refused.push(ev.id);
    return true;
  };
  const first = await w.owner.post("@agent first one", { channel: mine[0] });
  // Each: its turn ended (every retry of the refused reply is over), then exactly one reply.
  await w.waitReply(first, 60_000);
  const other = await w.owner.post("@agent second one", { channel: second });
  await w.waitReply(other, 60_000);
  assert.equal(refused.length, 2, "both refusals happened");
  intercept.fn = undefined;
  const logs = d.logs.slice(from);
  const limited = logs.find((l) => l.evt === "relay.rate_limited");
  assert.ok(limited, "the hint-less rate limit was logged");
  assert.ok((limited.pause_ms as number) >= 1000, "and backed off");
  assert.ok(
    logs.some((l) => String(l.reason ?? "").includes("mystery")),
    "the unknown refusal was logged with the relay's reason",
  );
  assert.equal(d.proc.exitCode, null, "no crash");
});

test("one budget for the identity: HTTP calls take frame slots, and a 429 from the HTTP bridge holds the sockets back too", async () => {
  const { client, identity, relayWith } = await import("./fixtures/relay-helpers.js");
  const me = identity();
  // The client's own budget: 5 frames per 2 s, every HTTP call included.
  const relay = await relayWith([me], { noLimits: true });
  cleanup.push(() => relay.close());
  const ch = await relay.createChannel({ name: "budget", members: [me.pk] });
  const c = client(relay, me, { connection: { frameQuota: { frames: 5, windowMs: 2000 } }, readRelayInfo: false });
  cleanup.push(async () => c.stop());
  await c.start();
  await waitFor(() => c.state === "subscribed", { what: "the membership subscription sent" });
  const before = c.metrics.budget.sent;
  await Promise.all(Array.from({ length: 8 }, () => c.query([{ kinds: [9], "#h": [ch] }])));
  assert.equal(c.metrics.budget.sent - before, 8, "each HTTP call took a slot of the frame budget");
  assert.ok(c.metrics.budget.waited > 0, "and some waited for the window to move");

  // The relay's bucket (shared by sockets and HTTP) runs out on HTTP calls: its 429 holds the socket too.
  const strict = await relayWith([me], { limits: { frameQuota: { frames: 4, windowMs: 3000 } } });
  cleanup.push(() => strict.close());
  const ch2 = await strict.createChannel({ name: "strict", members: [me.pk] });
  const d = client(strict, me, { readRelayInfo: false });
  cleanup.push(async () => d.stop());
  await d.start();
  assert.equal(await d.waitAuthenticated(10_000), true);
  await Promise.all(Array.from({ length: 5 }, () => d.query([{ kinds: [9], "#h": [ch2] }])));
  assert.ok(d.metrics.http.retries >= 1, "an HTTP call was refused with 429 and retried");
  const { outcome } = await d.send({ kind: 9, created_at: Math.floor(Date.now() / 1000), content: "after the pause", tags: [["h", ch2]] });
  assert.equal(outcome.status, "accepted");
  assert.equal(outcome.rateLimited, undefined, "the EVENT waited out the pause the HTTP refusal started: the relay never refused it");
});

test("a fleet divides the key's bucket: each daemon's budget is its share of the quota, the relay's stated one when stricter", async () => {
  const { client, identity, relayWith } = await import("./fixtures/relay-helpers.js");
  const { configSchema } = await import("../src/config/schema.js");
  const me = identity();
  const relay = await relayWith([me], { limits: { frameQuota: { frames: 30, windowMs: 5000 } } });
  cleanup.push(() => relay.close());
  const half = client(relay, me, { frameShare: 0.5 });
  cleanup.push(async () => half.stop());
  assert.deepEqual(half.frameQuota, { frames: 25, windowMs: 5000 }, "half of Buzz's 50 per 5 s before the relay has said anything");
  await half.start();
  await waitFor(() => half.info.source === "relay", { what: "the relay's document read" });
  assert.deepEqual(half.frameQuota, { frames: 15, windowMs: 5000 }, "half of the relay's stated 30 per 5 s");
  const parse = (share: unknown) =>
    configSchema.safeParse({ identity: { secret_key: "x" }, relay: { url: "ws://h", frame_quota: { share } } });
  assert.equal(parse(0.5).success, true);
  assert.equal(parse(0).success, false, "a share of nothing is refused");
  assert.equal(parse(1.5).success, false, "more than the whole bucket is refused");
});
