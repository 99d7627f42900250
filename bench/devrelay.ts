/**
 * Dev relay throughput: 5,000 kind 9 events published over one
 * WebSocket (200 in flight) to the relay running as its own process (`dist/cli.js
 * dev-relay`, build first), with one live `#h` subscriber; events/s accepted (OK) and
 * delivered, and the relay's RSS. Baseline in the same run: a bare `ws` echo server
 * (also its own process) bouncing the same frames — the physical limit of loopback
 * WebSocket on this machine. Run alone: `node --import tsx bench/devrelay.ts`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { getPublicKey, generateSecretKey, type Event } from "nostr-tools";
import { finalizeEvent } from "nostr-tools/wasm";
import WebSocket from "ws";
import { initCrypto } from "../src/devrelay/crypto.js";
import { RawClient } from "../kit/raw-client.js";
import { runIfMain } from "./standalone.js";

const N = 5000;
const IN_FLIGHT = 200;
const cli = fileURLToPath(new URL("../dist/cli.js", import.meta.url));

const ECHO_SERVER = `
import { WebSocketServer } from "ws";
const wss = new WebSocketServer({ host: "127.0.0.1", port: 0, maxPayload: 8 << 20 });
wss.on("listening", () => console.log("ws://127.0.0.1:" + wss.address().port));
wss.on("connection", (ws) => ws.on("message", (d) => ws.send(d, { binary: false })));
process.on("SIGTERM", () => process.exit(0));
`;

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Math.round(Number(m[1]) / 102.4) / 10 : NaN;
}

async function spawnWithUrl(args: string[], cwd?: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"], cwd });
  const first = await createInterface({ input: child.stdout! })[Symbol.asyncIterator]().next();
  return { child, url: String(first.value) };
}

/** Sends every frame keeping `IN_FLIGHT` outstanding; `ack` resolves when the reply for frame i came back. */
async function pump(frames: string[], send: (f: string) => void, onReply: (cb: () => void) => void): Promise<void> {
  let sent = 0;
  let done = 0;
  await new Promise<void>((resolve) => {
    onReply(() => {
      done++;
      if (sent < frames.length) send(frames[sent++]!);
      if (done === frames.length) resolve();
    });
    while (sent < Math.min(IN_FLIGHT, frames.length)) send(frames[sent++]!);
  });
}

export async function benchDevRelay(): Promise<Record<string, number>> {
  await initCrypto();
  const dir = mkdtempSync(join(tmpdir(), "bench-devrelay-"));
  const children: ChildProcess[] = [];
  try {
    const pub = generateSecretKey();
    const sub = generateSecretKey();
    const channel = randomUUID();
    const seed = join(dir, "seed.yaml");
    writeFileSync(seed, `channels:\n  - id: ${channel}\n    name: bench\n    members: [${getPublicKey(pub)}, ${getPublicKey(sub)}]\n`);
    const now = Math.floor(Date.now() / 1000);
    const events: Event[] = [];
    for (let i = 0; i < N; i++) {
      events.push(
        finalizeEvent({ kind: 9, created_at: now, tags: [["h", channel]], content: `bench message ${i} ${"lorem ipsum ".repeat(8)}` }, pub),
      );
    }
    const frames = events.map((e) => JSON.stringify(["EVENT", e]));

    // Baseline: bare ws echo of the same frames.
    const echo = await spawnWithUrl(["--input-type=module", "-e", ECHO_SERVER], fileURLToPath(new URL("..", import.meta.url)));
    children.push(echo.child);
    const ews = new WebSocket(echo.url);
    await new Promise((r) => ews.once("open", r));
    const e0 = performance.now();
    await pump(
      frames,
      (f) => ews.send(f),
      (cb) => ews.on("message", cb),
    );
    const echoSec = (performance.now() - e0) / 1000;
    const echoRss = rssMiB(echo.child.pid!);
    ews.close();

    // The relay.
    const relay = await spawnWithUrl([cli, "dev-relay", "--port", "0", "--seed", seed, "--no-limits"]);
    children.push(relay.child);
    const rssIdle = rssMiB(relay.child.pid!);
    const subscriber = await RawClient.authed(relay.url, sub);
    await subscriber.req("bench", { kinds: [9], "#h": [channel], since: now });
    const publisher = await RawClient.authed(relay.url, pub);
    let delivered = 0;
    let deliveredAt = 0;
    const allDelivered = new Promise<void>((resolve) => {
      subscriber.ws.on("message", (d) => {
        if (d.toString().startsWith('["EVENT"') && ++delivered === N) {
          deliveredAt = performance.now();
          resolve();
        }
      });
    });
    let refused = 0;
    const t0 = performance.now();
    await pump(
      frames,
      (f) => publisher.ws.send(f),
      (cb) =>
        publisher.ws.on("message", (d) => {
          const s = d.toString();
          if (!s.startsWith('["OK"')) return;
          if (!s.includes(",true,")) refused++;
          cb();
        }),
    );
    const acceptSec = (performance.now() - t0) / 1000;
    await allDelivered;
    const deliverSec = (deliveredAt - t0) / 1000;
    const rssAfter = rssMiB(relay.child.pid!);
    await subscriber.close();
    await publisher.close();
    if (refused > 0) throw new Error(`${refused} bench events were refused by the relay`);

    const echoRate = N / echoSec;
    return {
      devrelay_events: N,
      devrelay_accepted_per_s: Math.round(N / acceptSec),
      devrelay_delivered_per_s: Math.round(N / deliverSec),
      ws_echo_frames_per_s: Math.round(echoRate),
      devrelay_accepted_vs_echo: Math.round((N / acceptSec / echoRate) * 1000) / 1000,
      devrelay_delivered_vs_echo: Math.round((N / deliverSec / echoRate) * 1000) / 1000,
      devrelay_rss_idle_mib: rssIdle,
      devrelay_rss_after_mib: rssAfter,
      ws_echo_rss_mib: echoRss,
    };
  } finally {
    for (const c of children) c.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, benchDevRelay);
