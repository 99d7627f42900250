/**
 * End-to-end mention latencies, the daemon in this process
 * (its real `Daemon` class: relay client → gate → SQLite queue → turn dispatcher → agent
 * pool with the demo agent over ACP) against the dev relay, also in this process:
 *  3. relay publish → the bridge's gate decision (the `gate.accepted` log line is written
 *     after the signature check and the durable insert), for owner mentions in one thread,
 *     vs publish → delivery to a plain nostr-tools subscriber (wasm verifier, NIP-42) on the
 *     same relay, each alone on it. Target ratio ≤ 1.2.
 *  4. relay publish → `session/prompt` sent to the demo agent (AgentSession.prompt
 *     entered; the agent reads it from its pipe microseconds later), for top-level mentions,
 *     with the warm spare (warm_spare: true, spare ready) vs a cold spawn (warm_spare: false).
 *     Both run in the agent sandbox where bubblewrap works (agent.sandbox: auto); the
 * 4s. same with the warm spare and `agent.sandbox: off`: the baseline for the warm spare in
 *     the sandbox, whose set-up happens before the mention.
 * Run alone: `node --import tsx bench/mention.ts` (build first: the demo agent is dist/cli.js).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { generateSecretKey, getPublicKey, nip19, type Event, type EventTemplate } from "nostr-tools";
import { AbstractRelay } from "nostr-tools/abstract-relay";
import * as wasm from "nostr-tools/wasm";
import WebSocket from "ws";
import { stringify } from "yaml";
import { AgentSession } from "../src/agent/session.js";
import type { AgentPool } from "../src/agent/pool.js";
import { loadConfig } from "../src/config/load.js";
import { startDevRelay, type DevRelay } from "../src/devrelay/index.js";
import { Daemon } from "../src/app/daemon/daemon.js";
import { createLogger } from "../src/base/log.js";
import { RelayClient } from "../src/relay/client.js";
import { initCrypto } from "../src/nostr/verify.js";
import { sleep, waitFor } from "../kit/wait.js";
import { runIfMain } from "./standalone.js";

const GATE_SAMPLES = Number(process.env.BENCH_GATE_SAMPLES ?? 300);
const WARMUP = 20;
const PROMPT_SAMPLES = Number(process.env.BENCH_PROMPT_SAMPLES ?? 8);

export interface MentionResult {
  gate: number[];
  nostrTools: number[];
  promptWarm: number[];
  promptCold: number[];
  /** Warm spare, agent.sandbox: off. */
  promptWarmPlain: number[];
}

/** Resolvers keyed by event id, settled from log lines or subscriber callbacks. */
class Arrivals {
  private readonly waiting = new Map<string, (t: number) => void>();
  private readonly early = new Map<string, number>();
  arrived(id: string, t = performance.now()): void {
    const w = this.waiting.get(id);
    if (w) {
      this.waiting.delete(id);
      w(t);
    } else this.early.set(id, t);
  }
  wait(id: string, what: string, ms = 30_000): Promise<number> {
    const t = this.early.get(id);
    if (t !== undefined) return Promise.resolve(t);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`mention bench: no ${what} for ${id} within ${ms} ms`)), ms);
      this.waiting.set(id, (at) => {
        clearTimeout(timer);
        resolve(at);
      });
    });
  }
}

export async function benchMention(): Promise<MentionResult> {
  await initCrypto();
  const dir = mkdtempSync(join(tmpdir(), "bench-mention-"));
  // Latency, not quota: the relay's quotas and the publisher's frame budget are off here.
  const relay: DevRelay = await startDevRelay({ port: 0, noLimits: true });
  const bridgeSk = generateSecretKey();
  const bridge = getPublicKey(bridgeSk);
  const ownerSk = generateSecretKey();
  const owner = getPublicKey(ownerSk);
  const channel = await relay.createChannel({ name: "bench", about: "latency bench", members: [bridge, owner] });
  const publisher = new RelayClient({ url: relay.url, secretKey: ownerSk, connection: { frameQuota: null } });
  await publisher.start();
  if (!(await publisher.waitAuthenticated(10_000))) throw new Error("mention bench: publisher did not authenticate");
  const daemons: Daemon[] = [];
  const plain: AbstractRelay[] = [];

  const gateSeen = new Arrivals();
  const promptSeen = new Arrivals();
  let turnsEnded = 0;
  // The daemon's own log lines, timestamped as pino writes them (synchronously).
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      const s = chunk.toString();
      if (s.includes('"evt":"gate.accepted"')) gateSeen.arrived(/"event":"([0-9a-f]{64})"/.exec(s)![1]!);
      else if (s.includes('"evt":"turn.end"')) turnsEnded++;
      else if (s.includes('"level":"error"')) process.stderr.write(s);
      done();
    },
  });
  // Which mention a prompt belongs to: the newest trigger id in its text.
  const original = AgentSession.prototype.prompt;
  AgentSession.prototype.prompt = function (this: AgentSession, blocks, opts) {
    const t = performance.now();
    const text = JSON.stringify(blocks);
    for (const m of text.matchAll(/bench-mention-([0-9]+)/g)) promptSeen.arrived(m[1]!, t);
    return original.call(this, blocks, opts);
  };

  const mention = (text: string, thread?: string): Event => {
    const tags = [
      ["h", channel],
      ["p", bridge],
    ];
    if (thread) tags.push(["e", thread, "", "root"]);
    const tpl: EventTemplate = { kind: 9, created_at: Math.floor(Date.now() / 1000), content: text, tags };
    return publisher.sign(tpl);
  };
  /** Publish and wait for `arrival`: the latency in ms (publish not awaited first: OK may come after delivery). */
  const timed = async (ev: Event, arrival: (id: string) => Promise<number>): Promise<number> => {
    const t0 = performance.now();
    const published = publisher.publish(ev);
    const at = await arrival(ev.id);
    const o = await published;
    if (o.status !== "accepted") throw new Error(`mention bench: publish ${o.status}: ${o.reason}`);
    return at - t0;
  };

  const startDaemon = async (name: string, warmSpare: boolean, sandbox: "auto" | "off" = "auto"): Promise<Daemon> => {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(
      file,
      stringify({
        identity: { secret_key: nip19.nsecEncode(bridgeSk), owner: nip19.npubEncode(owner) },
        // Latency, not quota: the daemon's own frame budget is effectively off.
        relay: { url: relay.url, frame_quota: { frames: 1_000_000, window: "1s" } },
        agent: {
          command: process.execPath,
          args: [fileURLToPath(new URL("../dist/cli.js", import.meta.url)), "demo-agent"],
          cwd: join(dir, name, "{channel}"),
          warm_spare: warmSpare,
          max_concurrent: PROMPT_SAMPLES + 2,
          sandbox,
        },
        state_dir: join(dir, name, "state"),
        log: { level: "info" },
        shutdown_grace: "2s",
      }),
    );
    const d = new Daemon({ loaded: loadConfig(file), logger: createLogger({ level: "info", destination: sink }) });
    daemons.push(d);
    await d.start();
    return d;
  };
  const idle = async (d: Daemon) => {
    const end = Date.now() + 60_000;
    while (Date.now() < end && (d.scheduler.depth().queued > 0 || d.dispatcher.inFlight > 0)) await sleep(50);
  };
  const poolOf = (d: Daemon) => (d as unknown as { pool: AgentPool }).pool;

  try {
    // --- 3: the bridge's gate decision and, for the same events at the same time, a plain
    // nostr-tools subscriber in this process: same relay, same event loop, same load (the
    // bridge's turns for these mentions run meanwhile, as they would in a real room). ---
    const warm = await startDaemon("warm", true);
    const onauth = async (t: EventTemplate) =>
      wasm.finalizeEvent({ ...t, tags: t.tags.map((x) => (x[0] === "relay" ? ["relay", x[1]!.replace(/\/$/, "")] : x)) }, bridgeSk);
    const sub = new AbstractRelay(relay.url, {
      verifyEvent: wasm.verifyEvent,
      websocketImplementation: WebSocket as unknown as typeof globalThis.WebSocket,
    });
    plain.push(sub);
    sub.onauth = onauth;
    await sub.connect();
    // Subscribe only once authenticated: a REQ that races the AUTH is CLOSED with auth-required.
    const authed = () => (sub as unknown as { authPromise?: Promise<string> }).authPromise;
    for (let i = 0; i < 500 && !authed(); i++) await sleep(10);
    if (!authed()) throw new Error("mention bench: the relay sent no AUTH challenge to the plain subscriber");
    await authed();
    const plainSeen = new Arrivals();
    await new Promise<void>((resolve) => {
      sub.subscribe([{ kinds: [9], "#h": [channel], since: Math.floor(Date.now() / 1000) }], {
        onevent: (e) => plainSeen.arrived(e.id),
        oneose: () => resolve(),
      });
    });
    const root = mention("@bench root of the latency thread #final-only");
    await timed(root, (id) => gateSeen.wait(id, "gate decision"));
    const gate: number[] = [];
    const nostrTools: number[] = [];
    for (let i = 0; i < WARMUP + GATE_SAMPLES; i++) {
      const ev = mention(`@bench gate ${i} #silent`, root.id);
      const t0 = performance.now();
      const published = publisher.publish(ev);
      const [g, p] = await Promise.all([gateSeen.wait(ev.id, "gate decision"), plainSeen.wait(ev.id, "delivery")]);
      if ((await published).status !== "accepted") throw new Error("mention bench: publish refused");
      if (i >= WARMUP) {
        gate.push(g - t0);
        nostrTools.push(p - t0);
      }
    }
    sub.close();
    await idle(warm);

    // --- 4: publish → session/prompt, warm spare ready ---
    const promptWarm: number[] = [];
    for (let i = 0; i < PROMPT_SAMPLES; i++) {
      if (!(await poolOf(warm).spareReady())) throw new Error("mention bench: the warm spare did not start");
      const ended = turnsEnded;
      const ev = mention(`@bench bench-mention-${i} #final-only`);
      promptWarm.push(await timed(ev, () => promptSeen.wait(String(i), "session/prompt")));
      await waitFor(() => turnsEnded !== ended, { timeoutMs: 60_000, intervalMs: 20, what: "the turn to end" });
    }
    await warm.stop();

    // --- 4 baseline: cold spawn per mention ---
    const cold = await startDaemon("cold", false);
    const promptCold: number[] = [];
    for (let i = 0; i < PROMPT_SAMPLES; i++) {
      const ended = turnsEnded;
      const ev = mention(`@bench bench-mention-${1000 + i} #final-only`);
      promptCold.push(await timed(ev, () => promptSeen.wait(String(1000 + i), "session/prompt")));
      await waitFor(() => turnsEnded !== ended, { timeoutMs: 60_000, intervalMs: 20, what: "the turn to end" });
    }
    await cold.stop();

    // --- 4s: warm spare without the sandbox ---
    const plainDaemon = await startDaemon("plain", true, "off");
    const promptWarmPlain: number[] = [];
    for (let i = 0; i < PROMPT_SAMPLES; i++) {
      if (!(await poolOf(plainDaemon).spareReady())) throw new Error("mention bench: the warm spare did not start");
      const ended = turnsEnded;
      const ev = mention(`@bench bench-mention-${2000 + i} #final-only`);
      promptWarmPlain.push(await timed(ev, () => promptSeen.wait(String(2000 + i), "session/prompt")));
      await waitFor(() => turnsEnded !== ended, { timeoutMs: 60_000, intervalMs: 20, what: "the turn to end" });
    }
    await plainDaemon.stop();
    return { gate, nostrTools, promptWarm, promptCold, promptWarmPlain };
  } finally {
    AgentSession.prototype.prompt = original;
    for (const d of daemons) await d.stop().catch(() => undefined);
    for (const p of plain) p.close();
    publisher.stop();
    await relay.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, benchMention, (r) => {
  const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
  for (const [k, xs] of Object.entries(r)) console.log(k, xs.length, "median", pct(xs, 50).toFixed(3), "p99", pct(xs, 99).toFixed(3));
});
