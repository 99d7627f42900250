/**
 * Relay client figures, against the dev relay in this process:
 *  - publish → handler latency, median and p99 over 1,000 mentions, for the bridge's
 *    RelayClient and, in the same run on the same relay, a plain nostr-tools subscriber
 *    (AbstractRelay with the same wasm verifier, `onauth`), each alone on the relay — ratio
 *    bridge / baseline (the bridge does not verify here: the gate verifies what it acts on);
 *  - time and REQ frames to subscribe 500 channels: the bridge's one frame vs one REQ per
 *    channel (what the Rust bridge sends, there paced at 125 ms = 62.5 s for 500).
 * Run alone: `node --import tsx bench/relay.ts`.
 */
import { generateSecretKey, getPublicKey, type Event, type EventTemplate } from "nostr-tools";
import { AbstractRelay } from "nostr-tools/abstract-relay";
import * as wasm from "nostr-tools/wasm";
import WebSocket from "ws";
import { startDevRelay } from "../src/devrelay/index.js";
import { RelayClient } from "../src/relay/client.js";
import { initCrypto } from "../src/nostr/verify.js";
import { sleep, waitFor } from "../kit/wait.js";
import { runIfMain } from "./standalone.js";

const MENTIONS = 1000;
const CHANNELS = 500;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const r3 = (x: number) => Math.round(x * 1000) / 1000;

export async function benchRelay(): Promise<Record<string, number>> {
  await initCrypto();
  // Latency and frames, not quota: the relay's quotas and the clients' frame budgets are off here.
  const relay = await startDevRelay({ port: 0, noLimits: true });
  const bridgeSk = generateSecretKey();
  const bridge = getPublicKey(bridgeSk);
  const authorSk = generateSecretKey();
  const author = getPublicKey(authorSk);
  relay.addRelayMember(bridge);
  relay.addRelayMember(author);
  const channels: string[] = [];
  for (let i = 0; i < CHANNELS; i++) channels.push(await relay.createChannel({ name: `bench-${i}`, members: [bridge, author] }));
  const clients: RelayClient[] = [];
  const plain: AbstractRelay[] = [];
  try {
    // Let the 500 "member added" notices fall out of the 5 s resubscribe overlap: otherwise the
    // bridge's membership REQ replays and verifies them all, which a running bridge never sees.
    await sleep(6000);
    // Warm-up (JIT, relay code paths) so neither measurement pays for being first.
    const warm = new RelayClient({ url: relay.url, secretKey: bridgeSk, connection: { frameQuota: null } });
    clients.push(warm);
    warm.setChannels(channels.slice(0, 50).map((id) => ({ id, kinds: [9], requireMention: true })));
    await warm.start();
    await warm.waitSubscribed(30_000);
    warm.stop();

    // --- Subscribe 500 channels: the bridge (one REQ) ---
    const f0 = relay.stats().reqFrames;
    const bot = new RelayClient({ url: relay.url, secretKey: bridgeSk, connection: { frameQuota: null } });
    clients.push(bot);
    const s0 = performance.now();
    bot.setChannels(channels.map((id) => ({ id, kinds: [9], requireMention: true })));
    await bot.start();
    if (!(await bot.waitSubscribed(60_000))) throw new Error("bridge subscription not acknowledged");
    const bridgeSubMs = performance.now() - s0;
    const bridgeFrames = relay.stats().reqFrames - f0;

    // --- Baseline: one REQ per channel from a plain nostr-tools relay, unpaced ---
    // nostr-tools signs the relay tag with a trailing slash; Buzz wants none.
    const onauth = async (t: EventTemplate) =>
      wasm.finalizeEvent({ ...t, tags: t.tags.map((x) => (x[0] === "relay" ? ["relay", x[1]!.replace(/\/$/, "")] : x)) }, bridgeSk);
    const f1 = relay.stats().reqFrames;
    const p0 = performance.now();
    const perChannel = new AbstractRelay(relay.url, {
      verifyEvent: wasm.verifyEvent,
      websocketImplementation: WebSocket as unknown as typeof globalThis.WebSocket,
    });
    plain.push(perChannel);
    perChannel.onauth = onauth;
    await perChannel.connect();
    await new Promise<void>((resolve) => {
      let eosed = 0;
      for (const id of channels) {
        perChannel.subscribe([{ kinds: [9], "#h": [id], "#p": [bridge] }], {
          oneose: () => ++eosed === CHANNELS && resolve(),
          eoseTimeout: 60_000,
        });
      }
    });
    const perChannelMs = performance.now() - p0;
    const perChannelFrames = relay.stats().reqFrames - f1;
    perChannel.close();

    // --- Latency: 1,000 mentions to the bridge, then 1,000 to the plain subscriber, each alone
    // on the relay (side by side, whichever subscribed first would be served first). ---
    const publisher = new RelayClient({ url: relay.url, secretKey: authorSk, connection: { frameQuota: null } });
    clients.push(publisher);
    await publisher.start();
    if (!(await publisher.waitAuthenticated(10_000))) throw new Error("publisher did not authenticate");
    const sentAt = new Map<string, number>();
    const measure = async (lat: number[]) => {
      const now = Math.floor(Date.now() / 1000);
      const events = Array.from({ length: MENTIONS }, (_, i) =>
        publisher.sign({
          kind: 9,
          created_at: now,
          content: `mention ${i}`,
          tags: [
            ["h", channels[i % CHANNELS]!],
            ["p", bridge],
          ],
        }),
      );
      for (const ev of events) {
        sentAt.set(ev.id, performance.now());
        const o = await publisher.publish(ev);
        if (o.status !== "accepted") throw new Error(`bench publish ${o.status}: ${o.reason}`);
      }
      await waitFor(() => lat.length >= MENTIONS, {
        timeoutMs: 60_000,
        intervalMs: 10,
        what: () => `every mention delivered (only ${lat.length}/${MENTIONS})`,
      });
    };
    const arrival = (lat: number[]) => (ev: Event) => {
      const t = sentAt.get(ev.id);
      if (t !== undefined) lat.push(performance.now() - t);
    };

    const bridgeLat: number[] = [];
    bot.on("event", arrival(bridgeLat));
    await measure(bridgeLat);
    bot.stop();

    const plainLat: number[] = [];
    const baseline = new AbstractRelay(relay.url, {
      verifyEvent: wasm.verifyEvent,
      websocketImplementation: WebSocket as unknown as typeof globalThis.WebSocket,
    });
    plain.push(baseline);
    baseline.onauth = onauth;
    await baseline.connect();
    await new Promise<void>((resolve) => {
      baseline.subscribe([{ kinds: [9], "#h": channels, "#p": [bridge], since: Math.floor(Date.now() / 1000) }], {
        onevent: arrival(plainLat),
        oneose: () => resolve(),
      });
    });
    await measure(plainLat);

    const bMed = pct(bridgeLat, 50);
    const pMed = pct(plainLat, 50);
    const bP99 = pct(bridgeLat, 99);
    const pP99 = pct(plainLat, 99);
    return {
      relay_mentions: MENTIONS,
      relay_latency_median_ms: r3(bMed),
      relay_latency_p99_ms: r3(bP99),
      nostr_tools_latency_median_ms: r3(pMed),
      nostr_tools_latency_p99_ms: r3(pP99),
      relay_latency_median_vs_nostr_tools: r3(bMed / pMed),
      relay_latency_p99_vs_nostr_tools: r3(bP99 / pP99),
      relay_subscribe_500_ms: r3(bridgeSubMs),
      relay_subscribe_500_req_frames: bridgeFrames,
      per_channel_subscribe_500_ms: r3(perChannelMs),
      per_channel_subscribe_500_req_frames: perChannelFrames,
      relay_subscribe_500_vs_per_channel: r3(bridgeSubMs / perChannelMs),
      rust_paced_subscribe_500_ms_estimate: CHANNELS * 125,
    };
  } finally {
    for (const c of clients) c.stop();
    for (const p of plain) p.close();
    await relay.close();
  }
}

runIfMain(import.meta.url, benchRelay);
