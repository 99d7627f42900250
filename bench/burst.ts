/**
 * Figure 7b: 10,000 mentions in one burst (half from the owner, half from a stranger)
 * through the gate's decision and the queue, in this process, as `test/queue-burst.test.ts`
 * drives them (the test asserts what happens to each; this part measures the memory). The
 * events arrive as wire JSON and are parsed one by one, so only what the gate and the queue
 * keep stays reachable. The figure: V8 heap in use after the burst against before it (the
 * gate and the queue set up), both after a full GC and read while both are still in use.
 * The baseline, measured in the same run: the heap the same 10,000 events take when all of
 * them are kept parsed. Keeping every refused event would come to about 0.65× (measured so,
 * with a deliberate leak in the denial reporter); the queue keeps its waiting events in its
 * store. Target in bench/README.md. Run alone: `node --import tsx bench/burst.ts`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import * as W from "nostr-tools/wasm";
import { initNostrWasm } from "nostr-wasm";
import type { Event, EventTemplate } from "nostr-tools";
import { decide, type GateContext, type Refusal as GateRefusal } from "../src/gate/decide.js";
import { DeniedReporter } from "../src/gate/denied.js";
import { SqliteStore } from "../src/queue/sqlite-store.js";
import { Scheduler } from "../src/queue/scheduler.js";
import { silentLogger } from "../src/base/log.js";
import { agent, owner, stranger, CHANNEL, mention, makeConfig } from "../kit/queue-helpers.js";
import { runIfMain } from "./standalone.js";

const BURST = Number(process.env.BENCH_BURST ?? 10_000);

export interface BurstResult {
  mentions: number;
  accepted: number;
  queued: number;
  refused: number;
  /** Heap the parsed events take when all are kept (the baseline). */
  events_heap_mib: number;
  /** Heap in use after the burst minus before it (gate and queue set up), both after a full GC. */
  heap_growth_mib: number;
}

setFlagsFromString("--expose-gc");
// Bytecode of functions not run for a while is dropped at a GC: a few MiB of noise in a figure of a few MiB.
setFlagsFromString("--no-flush-bytecode");
const gc = runInNewContext("gc") as () => void;
const heapMiB = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
};
const round = (x: number) => Math.round(x * 100) / 100;

/** The baseline: the heap every event of the burst takes, kept parsed (in its own frame, so nothing of it outlives the call). */
function keptHeapMiB(wire: string[]): number {
  const h0 = heapMiB();
  const kept = wire.map((s) => JSON.parse(s) as Event);
  const grown = heapMiB() - h0;
  if (kept.length !== wire.length) throw new Error("burst bench: events lost");
  return grown;
}

/** The burst through the gate and the queue; the heap they grew by, read before they are closed. */
async function runBurst(wire: string[], dir: string) {
  const config = makeConfig({ defaults: { respond_to: "owner-only", on_denied: "react" }, agent: { session_scope: "channel" } });
  const logger = silentLogger();
  const ctx: GateContext = {
    self: agent.pk,
    owner: owner.pk,
    config,
    channel: (id) => (id === CHANNEL ? { id, name: "general", type: "stream" } : undefined),
    handled: () => false,
    verify: (ev) => W.verifyEvent(ev),
  };
  const reporter = new DeniedReporter({ logger, publish: async () => undefined, verify: ctx.verify });
  const backend = SqliteStore.open(join(dir, "burst"));
  let refused = 0;
  const scheduler = new Scheduler({
    backend,
    daemon: { id: "bench", host: "bench", pid: process.pid, maxConcurrent: config.agent.max_concurrent },
    logger,
    sessionScope: config.agent.session_scope,
    maxConcurrent: config.agent.max_concurrent,
    confirmPublished: async (ids) => ids,
  });
  scheduler.on("refused", (r) => void (refused += r.events.length));
  const before = heapMiB();
  let accepted = 0;
  for (const s of wire) {
    const ev = JSON.parse(s) as Event;
    const d = decide(ev, ctx);
    if (d.action === "accept") {
      if (await scheduler.accept(ev, d.channel.id)) accepted++;
    } else await reporter.report(ev, d as GateRefusal);
  }
  await new Promise((r) => setImmediate(r));
  // Measured while the gate and the queue are still in use: what they hold counts.
  const grown = heapMiB() - before;
  const queued = (await scheduler.currentDepth()).queued;
  await scheduler.close();
  await backend.close();
  return { accepted, refused, queued, grown };
}

export async function benchBurst(): Promise<BurstResult> {
  W.setNostrWasm(await initNostrWasm());
  const sign = W.finalizeEvent as (t: EventTemplate, sk: Uint8Array) => Event;
  const wire: string[] = [];
  for (let i = 0; i < BURST / 2; i++) {
    wire.push(JSON.stringify(mention(stranger, `stranger ${i}`, { sign, created_at: 2_000_000 + i })));
    wire.push(JSON.stringify(mention(owner, `owner ${i}`, { sign, created_at: 2_000_000 + i })));
  }
  const eventsHeap = keptHeapMiB(wire);
  const dir = mkdtempSync(join(tmpdir(), "bench-burst-"));
  try {
    const { accepted, refused, queued, grown } = await runBurst(wire, dir);
    if (accepted !== BURST / 2 || refused + queued !== accepted)
      throw new Error(`burst bench: ${accepted} accepted, ${queued} queued, ${refused} refused`);
    return {
      mentions: BURST,
      accepted,
      queued,
      refused,
      events_heap_mib: round(eventsHeap),
      heap_growth_mib: round(grown),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, benchBurst);
