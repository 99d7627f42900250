/**
 * Figure 7h: `buzz-bridge run` against the hostile relay of the reliability suite
 * (`kit/hostile-relay.ts`), which sends 5,000 malformed frames and forged events
 * on the channel subscription: invalid JSON, wrong ids, bad signatures, 20 events of 300 KB,
 * 20 of 10,000 tags. `test/reliability-hostile-relay.test.ts` asserts what the daemon does
 * (nothing published, bounded log, a real mention still answered once); this part measures
 * what the flood leaves in its memory: the daemon's RSS after a full GC, after the flood
 * against before it. The baseline, in the same run: the flood's own size (the bytes of its
 * frames). A daemon that kept what it refused would grow by about that much or more.
 * Target in bench/README.md. Build first; run alone: `node --import tsx bench/hostile.ts`.
 */
import { randomUUID } from "node:crypto";
import { finalizeEvent } from "nostr-tools/wasm";
import { World } from "../kit/world.js";
import { hostileFrames, startHostileRelay } from "../kit/hostile-relay.js";
import { initCrypto } from "../src/nostr/verify.js";
import { nowSec } from "../src/base/time.js";
import { sleep } from "../kit/wait.js";
import { rssMiB } from "./busy.js";
import { runIfMain } from "./standalone.js";

const FRAMES = Number(process.env.BENCH_HOSTILE_FRAMES ?? 5000);
/** Preloaded into the daemon (NODE_OPTIONS): a full GC on SIGUSR2, so RSS is read without garbage. */
const GC_HOOK =
  "data:text/javascript,import v8 from 'node:v8';import vm from 'node:vm';v8.setFlagsFromString('--expose-gc');const gc=vm.runInNewContext('gc');process.on('SIGUSR2',()=>gc())";

export interface HostileResult {
  frames: number;
  flood_mib: number;
  rss_before_mib: number;
  rss_after_mib: number;
  rss_growth_mib: number;
}

const round = (x: number) => Math.round(x * 100) / 100;

export async function benchHostile(): Promise<HostileResult> {
  await initCrypto();
  const w = await World.create();
  const channel = randomUUID();
  const hostile = await startHostileRelay({
    channel,
    name: "hostile-room",
    about: "A relay that lies",
    members: [w.agent.pk, w.owner.pk, w.stranger.pk],
  });
  try {
    const d = await w.startDaemon(
      { relay: { url: hostile.url }, log: { level: "info" } },
      { env: { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${JSON.stringify(GC_HOOK)}`.trim() } },
    );
    const pid = d.proc.pid!;
    const collected = async () => {
      process.kill(pid, "SIGUSR2");
      await sleep(1000); // the GC runs and the allocator hands pages back
      return rssMiB(pid);
    };
    const sub = await hostile.subscribed();
    const before = await collected();
    const frames = hostileFrames({ sub, channel, agent: w.agent.pk, owner: w.owner.pk, strangerSk: w.stranger.sk, total: FRAMES });
    for (let i = 0; i < frames.length; i += 500) await hostile.send(frames.slice(i, i + 500));
    // A sentinel after the flood on the same socket: once it is decided, every frame before it was handled.
    const sentinel = finalizeEvent(
      {
        kind: 9,
        created_at: nowSec(),
        content: "@agent sentinel",
        tags: [
          ["h", channel],
          ["p", w.agent.pk],
        ],
      },
      w.stranger.sk,
    );
    await hostile.send([JSON.stringify(["EVENT", sub, sentinel])]);
    await d.waitLog((l) => l.evt === "gate.denied" && l.event === sentinel.id, 120_000);
    if (d.proc.exitCode !== null || d.proc.signalCode !== null) throw new Error("hostile bench: the daemon died in the flood");
    const after = await collected();
    const flood = frames.reduce((n, f) => n + Buffer.byteLength(f), 0) / 2 ** 20;
    return {
      frames: FRAMES,
      flood_mib: round(flood),
      rss_before_mib: round(before),
      rss_after_mib: round(after),
      rss_growth_mib: round(after - before),
    };
  } finally {
    await w.close();
    await hostile.close();
  }
}

runIfMain(import.meta.url, benchHostile);
