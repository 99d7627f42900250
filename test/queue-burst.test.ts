/**
 * 10,000 mentions in a burst: the gate dispatches nothing the policy forbids (strangers
 * are denied without a signature check and told once), and the queue stays bounded at
 * its caps with every refusal logged and announced. What the burst costs in memory is
 * `npm run bench`'s figure 7b (bench/burst.ts), against the events' own heap in the same run.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import * as W from "nostr-tools/wasm";
import { initNostrWasm } from "nostr-wasm";
import type { Event, EventTemplate } from "nostr-tools";
import { decide, type GateContext, type Refusal as GateRefusal } from "../src/gate/decide.js";
import { DeniedReporter } from "../src/gate/denied.js";
import { agent, owner, stranger, CHANNEL, mention, fromWire, makeConfig, captureLogger, tempDir } from "../kit/queue-helpers.js";
import { place } from "./fixtures/queue-harness.js";
import { waitFor } from "../kit/wait.js";

const tmp = tempDir("bb-queue-burst-");
after(() => tmp.cleanup());
const BURST = 10_000;
let ownerBurst: Event[] = [];
let strangerBurst: Event[] = [];

before(async () => {
  W.setNostrWasm(await initNostrWasm());
  const sign = W.finalizeEvent as (t: EventTemplate, sk: Uint8Array) => Event;
  ownerBurst = Array.from({ length: BURST / 2 }, (_, i) => fromWire(mention(owner, `owner ${i}`, { sign, created_at: 2_000_000 + i })));
  strangerBurst = Array.from({ length: BURST / 2 }, (_, i) =>
    fromWire(mention(stranger, `stranger ${i}`, { sign, created_at: 2_000_000 + i })),
  );
});

test("10,000 mentions: bounded queue, strangers never dispatched, every refusal visible", async () => {
  const config = makeConfig({ defaults: { respond_to: "owner-only", on_denied: "react" }, agent: { session_scope: "channel" } });
  const { logger, lines } = captureLogger("info");
  let verified = 0;
  const ctx: GateContext = {
    self: agent.pk,
    owner: owner.pk,
    config,
    channel: (id) => (id === CHANNEL ? { id, name: "general", type: "stream" } : undefined),
    handled: () => false,
    verify: (ev) => (verified++, W.verifyEvent(ev)),
  };
  const published: EventTemplate[] = [];
  const reporter = new DeniedReporter({ logger, publish: async (t) => void published.push(t), verify: ctx.verify });
  // No agent slot: everything the burst leaves stays queued, as behind a busy agent.
  const q = await (await place("sqlite", { dir: tmp.dir })).open({ sessionScope: "channel", maxConcurrent: 0 });
  after(() => q.close());
  const { scheduler, refusals, lines: queueLines } = q;

  let accepted = 0;
  for (let i = 0; i < BURST / 2; i++) {
    for (const ev of [strangerBurst[i]!, ownerBurst[i]!]) {
      const d = decide(ev, ctx);
      if (d.action === "accept") {
        assert.equal(ev.pubkey, owner.pk, "only what the policy allows is accepted");
        if (await scheduler.accept(ev, d.channel.id)) accepted++;
      } else await reporter.report(ev, d as GateRefusal);
    }
  }
  await scheduler.close(); // announces the refusals still coalescing

  assert.equal(accepted, BURST / 2);
  assert.equal(verified, BURST / 2 + 1, "only the accepted events and the one denial answered were signature-checked");
  assert.equal(published.length, 1, "the stranger got one 🔒, not thousands");
  assert.equal(lines.filter((l) => l.evt === "gate.denied").length, BURST / 2, "each denial logged");

  const depth = await scheduler.currentDepth();
  assert.equal(depth.queued, 500, "the scope holds at most its cap");
  const refusedIds = refusals.flatMap((r) => r.events.map((e) => e.id));
  assert.equal(refusedIds.length, BURST / 2 - 500);
  assert.equal(new Set(refusedIds).size, refusedIds.length);
  assert.equal(queueLines.filter((l) => l.evt === "queue.refused").length, BURST / 2 - 500, "each refusal logged");
  // The oldest were refused; the newest 500 wait (10 turns of 50).
  assert.deepEqual(
    refusedIds.slice(0, 3),
    ownerBurst.slice(0, 3).map((e) => e.id),
  );
  const waiting = (await q.backend.scopeWork(CHANNEL, 50)).waiting;
  assert.equal(waiting[0], ownerBurst[BURST / 2 - 500]!.id);
  assert.equal(waiting.length, 50);
  // Every accepted event is accounted for: waiting/in a turn, or refused with a notice.
  assert.equal(refusedIds.length + depth.queued, accepted);
});

test("a burst of new threads is bounded by the total cap, refusals announced", async () => {
  const q = await (await place("sqlite", { dir: tmp.dir })).open({ maxConcurrent: 0, totalCap: 1_000 });
  after(() => q.close());
  const { scheduler, refusals, lines } = q;
  for (const ev of ownerBurst.slice(0, 2_000)) await scheduler.accept(ev, CHANNEL);
  await waitFor(() => refusals.length, { what: "the refusal notices" });
  await scheduler.close();
  const depth = await scheduler.currentDepth();
  assert.equal(depth.queued, 1_000);
  assert.equal(depth.scopes, 1_000);
  const refused = refusals.flatMap((r) => r.events);
  assert.equal(refused.length, 1_000);
  assert.ok(refusals.every((r) => r.reason === "queue-full"));
  assert.equal(lines.filter((l) => l.evt === "queue.refused").length, 1_000);
});
