/**
 * Living within the relay's frame quota (docs/protocol.md, "Limits"): a burst of mentions
 * costs the daemon no refused frame on a relay enforcing Buzz's quota, every mention is
 * answered once in its own thread, and a relay stricter than it says still gets every reply.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import { FrameBudget } from "../src/relay/frame-budget.js";
import { startFrameProxy, type FrameProxy } from "./fixtures/frame-proxy.js";
import { World } from "./fixtures/world.js";

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function burstWorld(relayLimits?: Parameters<typeof World.create>[0]): Promise<{ w: World; proxy: FrameProxy; channels: string[] }> {
  const w = await World.create(relayLimits);
  const channels: string[] = [];
  for (let i = 0; i < 20; i++) channels.push(await w.addChannel({ name: `burst-${i}`, members: [w.agent, w.owner] }));
  const proxy = await startFrameProxy(w.relay.url);
  cleanup.push(
    () => w.close(),
    () => proxy.close(),
  );
  return { w, proxy, channels };
}

/** Each mention's turn ended, and then it has exactly one reply in its own thread (World.waitReply). */
async function everyMentionAnsweredOnce(w: World, mentions: Event[]): Promise<void> {
  for (const ev of mentions) await w.waitReply(ev, 60_000);
}

test("a burst of 20 owner mentions in 20 channels costs no refused frame and each is answered once", async () => {
  const { w, proxy, channels } = await burstWorld();
  await w.startDaemon({ relay: { url: proxy.url }, agent: { max_concurrent: 4 } });
  const mentions = await Promise.all(channels.map((ch, i) => w.owner.post(`@agent burst ${i}`, { channel: ch })));
  await everyMentionAnsweredOnce(w, mentions);
  // ✅ is each turn's last frame (typing stops before it): once all are stored, nothing is on its way.
  for (const ev of mentions) await w.waitReaction(ev, "✅", 60_000);
  assert.deepEqual(proxy.refused, [], "the relay refused none of the daemon's frames");
  const sentIds = proxy.sent.filter((f) => f.type === "EVENT" && f.kind === 9).map((f) => f.id);
  assert.equal(new Set(sentIds).size, 20, "20 replies went out");
});

test("a relay stricter than its stated quota still gets every reply, once", async () => {
  const { w, proxy, channels } = await burstWorld({ relayLimits: { frameQuota: { frames: 12, windowMs: 5000 } } });
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
  const w = await World.create();
  const second = await w.addChannel({ name: "second", members: [w.agent, w.owner] });
  const refused: string[] = [];
  // The first reply is answered `rate-limited` with no hint; the next one with an unknown reason.
  const proxy = await startFrameProxy(w.relay.url, {
    intercept: (f, answer) => {
      const ev = f[0] === "EVENT" ? (f[1] as { id: string; kind: number; pubkey: string }) : undefined;
      if (ev?.kind !== 9 || ev.pubkey !== w.agent.pk || refused.length >= 2 || refused.includes(ev.id)) return false;
      answer(["OK", ev.id, false, refused.length === 0 ? "rate-limited: slow down" : "mystery: the relay will not say why"]);
      refused.push(ev.id);
      return true;
    },
  });
  cleanup.push(
    () => w.close(),
    () => proxy.close(),
  );
  const d = await w.startDaemon({ relay: { url: proxy.url } });
  const first = await w.owner.post("@agent first one");
  // Each: its turn ended (every retry of the refused reply is over), then exactly one reply.
  await w.waitReply(first, 60_000);
  const other = await w.owner.post("@agent second one", { channel: second });
  await w.waitReply(other, 60_000);
  assert.equal(refused.length, 2, "both refusals happened");
  const limited = d.logs.find((l) => l.evt === "relay.rate_limited");
  assert.ok(limited, "the hint-less rate limit was logged");
  assert.ok((limited.pause_ms as number) >= 1000, "and backed off");
  assert.ok(
    d.logs.some((l) => String(l.reason ?? "").includes("mystery")),
    "the unknown refusal was logged with the relay's reason",
  );
  assert.equal(d.proc.exitCode, null, "no crash");
});
