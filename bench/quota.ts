/**
 * Living within Buzz's quota, measured at the daemon (its real `Daemon` class, in this
 * process) through a frame-counting proxy to the dev relay with Buzz's limits on
 * (docs/protocol.md §7: about 50 frames per 5 s per key, counting every WebSocket frame of
 * every connection and every HTTP bridge call of the identity):
 *  - 5: REQ frames and time for the daemon to subscribe 500 channels at start (the channels
 *    were just created, so their member-added notifications replay meanwhile);
 *  - frames the relay refused during that start, and during a burst of 20 owner mentions in
 *    20 channels (target 0);
 *  - what one mention costs the key's quota during the burst, as the relay counts it (all
 *    connections and HTTP calls of the daemon's key): WebSocket frames and HTTP calls per
 *    mention, and the mentions a minute that Buzz's 600 frames a minute would then allow;
 *  - the burst's last reply, as a ratio to the time the quota allows for its 20 replies alone
 *    (20 frames at 50 per 5 s = 2 s), and to the same burst in the same run on a relay
 *    without quotas and a daemon without a budget (where the agent turns alone set the pace).
 * Run alone: `node --import tsx bench/quota.ts` (build first: the demo agent is dist/cli.js).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateSecretKey, getPublicKey, nip19 } from "nostr-tools";
import { stringify } from "yaml";
import { loadConfig } from "../src/config/load.js";
import { startDevRelay } from "../src/devrelay/index.js";
import { Daemon } from "../src/app/daemon/daemon.js";
import { createLogger } from "../src/base/log.js";
import { RelayClient } from "../src/relay/client.js";
import { message } from "../src/nostr/events.js";
import { initCrypto } from "../src/nostr/verify.js";
import { startFrameProxy } from "../kit/frame-proxy.js";
import { sleep, waitFor } from "../kit/wait.js";
import { runIfMain } from "./standalone.js";

const CHANNELS = 500;
const BURST = 20;
const QUOTA = { frames: 50, windowMs: 5000 };
const r3 = (x: number) => Math.round(x * 1000) / 1000;

interface Run {
  subscribedMs: number;
  startReqs: number;
  startRefused: number;
  burstRefused: number;
  burstFrames: number;
  lastReplyMs: number;
  /** What the daemon's key drew from the relay's one bucket during the burst (settled). */
  keyWsFrames: number;
  keyHttpCalls: number;
  keyRefused: number;
}

/** One daemon start with 500 channels, then the burst; `limited` false = no relay quota and no budget. */
async function run(limited: boolean): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), "bench-quota-"));
  const relay = await startDevRelay({ port: 0, noLimits: !limited }); // Buzz's limits are the default
  const bridgeSk = generateSecretKey();
  const bridge = getPublicKey(bridgeSk);
  const ownerSk = generateSecretKey();
  const owner = getPublicKey(ownerSk);
  relay.addRelayMember(bridge);
  const channels: string[] = [];
  for (let i = 0; i < CHANNELS; i++) channels.push(await relay.createChannel({ name: `quota-${i}`, members: [bridge, owner] }));
  const proxy = await startFrameProxy(relay.url);
  const ownerClient = new RelayClient({ url: relay.url, secretKey: ownerSk });
  let daemon: Daemon | undefined;
  try {
    const file = join(dir, "bridge.yaml");
    writeFileSync(
      file,
      stringify({
        identity: { secret_key: nip19.nsecEncode(bridgeSk), owner: nip19.npubEncode(owner) },
        relay: { url: proxy.url, ...(limited ? {} : { frame_quota: { frames: 1_000_000, window: "1s" } }) },
        agent: {
          command: process.execPath,
          args: [fileURLToPath(new URL("../dist/cli.js", import.meta.url)), "demo-agent"],
          cwd: join(dir, "work", "{channel}"),
          max_concurrent: 4,
        },
        state_dir: join(dir, "state"),
        log: { level: "warn" },
        shutdown_grace: "2s",
      }),
    );
    daemon = new Daemon({ loaded: loadConfig(file), logger: createLogger({ level: "error" }) });

    // --- Start with 500 channels ---
    const t0 = performance.now();
    await daemon.start();
    while (daemon.relay.state !== "subscribed" && performance.now() - t0 < 60_000) await sleep(10);
    const subscribedMs = performance.now() - t0;
    await sleep(3000); // coalesced joins replayed from the notifications would show by now
    const startReqs = proxy.count("REQ");
    const startRefused = proxy.refused.length;

    // --- Burst: 20 owner mentions in 20 channels at once ---
    await ownerClient.start();
    if (!(await ownerClient.waitAuthenticated(10_000))) throw new Error("quota bench: owner did not authenticate");
    proxy.reset();
    const usage0 = relay.keyUsage(bridge);
    const b0 = Date.now();
    const posted = await Promise.all(
      channels.slice(0, BURST).map((ch, i) => ownerClient.send(message(ch, `@agent quota burst ${i}`, { mentions: [bridge] }))),
    );
    if (posted.some((p) => p.outcome.status !== "accepted")) throw new Error("quota bench: a burst mention was not accepted");
    const replyFrames = () => proxy.sent.filter((f) => f.type === "EVENT" && f.kind === 9);
    const replied = () => new Set(replyFrames().map((f) => f.id)).size;
    await waitFor(() => replied() >= BURST, {
      timeoutMs: 120_000,
      intervalMs: 20,
      what: () => `quota bench: every reply (only ${replied()}/${BURST})`,
    });
    const replies = replyFrames();
    const lastReplyMs = Math.max(...replies.map((f) => f.at)) - b0;
    await sleep(3000); // reactions, typing and work status that follow the replies
    const usage1 = relay.keyUsage(bridge);
    return {
      subscribedMs,
      startReqs,
      startRefused,
      burstRefused: proxy.refused.length,
      burstFrames: proxy.sent.length,
      lastReplyMs,
      keyWsFrames: usage1.wsFrames - usage0.wsFrames,
      keyHttpCalls: usage1.httpCalls - usage0.httpCalls,
      keyRefused: usage1.refused - usage0.refused,
    };
  } finally {
    ownerClient.stop();
    await daemon?.stop().catch(() => undefined);
    await proxy.close();
    await relay.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchQuota(): Promise<Record<string, number>> {
  await initCrypto();
  const buzz = await run(true);
  // Baseline, same run: the same start and burst on a relay without quotas, no frame budget.
  const free = await run(false);
  const quotaBoundMs = (BURST / QUOTA.frames) * QUOTA.windowMs;
  return {
    daemon_subscribe_500_ms: r3(buzz.subscribedMs),
    daemon_subscribe_500_req_frames: buzz.startReqs,
    start_refused_frames: buzz.startRefused,
    burst_mentions: BURST,
    burst_refused_frames: buzz.burstRefused,
    burst_frames_sent: buzz.burstFrames,
    burst_last_reply_ms: buzz.lastReplyMs,
    burst_replies_quota_bound_ms: quotaBoundMs,
    burst_last_reply_vs_quota_bound: r3(buzz.lastReplyMs / quotaBoundMs),
    unlimited_burst_last_reply_ms: free.lastReplyMs,
    unlimited_burst_frames_sent: free.burstFrames,
    burst_last_reply_vs_unlimited: r3(buzz.lastReplyMs / free.lastReplyMs),
    burst_key_ws_frames_per_mention: r3(buzz.keyWsFrames / BURST),
    burst_key_http_calls_per_mention: r3(buzz.keyHttpCalls / BURST),
    burst_key_cost_per_mention: r3((buzz.keyWsFrames + buzz.keyHttpCalls) / BURST),
    burst_key_refused: buzz.keyRefused,
    quota_frames_per_minute: (QUOTA.frames * 60_000) / QUOTA.windowMs,
    quota_mentions_per_minute: r3(((QUOTA.frames * 60_000) / QUOTA.windowMs / (buzz.keyWsFrames + buzz.keyHttpCalls)) * BURST),
  };
}

runIfMain(import.meta.url, benchQuota);
