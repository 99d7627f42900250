/**
 * Heartbeats in a fleet: every daemon ticks, one fires per period — the first to claim
 * the period in the shared database; the others log the tick as skipped (other-daemon).
 * Real PostgreSQL; the Heartbeat as the daemon builds it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Heartbeat } from "../src/turn/heartbeat.js";
import { PostgresStore } from "../src/queue/pg-store.js";
import { agent, captureLogger } from "../kit/queue-helpers.js";
import { usePostgres } from "../kit/postgres.js";
import { waitFor } from "../kit/wait.js";

const pg = usePostgres();

test("three daemons tick in the same period: one heartbeat fires, the others skip as other-daemon", async (ctx) => {
  if (pg.skip) return ctx.skip(pg.skip);
  const url = await pg.server!.createDatabase();
  const stores = await Promise.all([0, 1, 2].map(() => PostgresStore.open({ url, identity: agent.pk })));
  const { logger, lines } = captureLogger("info");
  let runs = 0;
  const beats = stores.map(
    (s) =>
      new Heartbeat({
        everyMs: 60_000,
        channel: "c",
        load: () => ({ inFlight: 0, queued: 0 }),
        listening: () => true,
        member: () => true,
        run: async () => void runs++,
        logger,
        claimTick: () => s.claimPeriod("heartbeat:c", 60_000),
      }),
  );
  assert.deepEqual(
    beats.map((b) => b.tick()),
    ["claiming", "claiming", "claiming"],
  );
  await waitFor(() => lines.filter((l) => /^heartbeat\./.test(String(l.evt))).length >= 3, {
    timeoutMs: 5000,
    intervalMs: 20,
    what: "a heartbeat line from each of the three daemons",
  });
  assert.equal(runs, 1, "one heartbeat for the fleet");
  assert.equal(lines.filter((l) => l.evt === "heartbeat.fired").length, 1);
  assert.deepEqual(
    lines.filter((l) => l.evt === "heartbeat.skipped").map((l) => l.reason),
    ["other-daemon", "other-daemon"],
  );
  await Promise.all(stores.map((s) => s.close()));
});
