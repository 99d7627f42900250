/**
 * The fleet's PostgreSQL goes away while mentions arrive: the daemon keeps running, pauses
 * intake (`intake.paused`, reason `unreachable`; `/readyz` 503 naming the state store) and,
 * once the database is back, handles what waited (`intake.resumed`). Judged from the
 * channel (kit/channel-oracle.ts): every mention answered exactly once.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { DaemonProc, World } from "../kit/world.js";
import { useFleet } from "./fixtures/fleet.js";
import { ask, assertAnsweredOnce, type Asked } from "../kit/channel-oracle.js";
import { turnsSummary } from "../kit/reliability-helpers.js";
import { waitFor } from "../kit/wait.js";

let w: World;
let d: DaemonProc;
const fleet = useFleet({
  channels: ["outage-room"],
  setUp: async (f) => {
    w = f.w;
    if (f.skip) return;
    const db = await f.database();
    const [config] = f.configs(1, () => ({ http: { listen: "127.0.0.1:0" }, log: { level: "info" } }));
    d = (await f.start([config!], db.env))[0]!;
  },
});

test("PostgreSQL away while mentions arrive: intake pauses, and with the database back every mention is answered once", {
  timeout: 120_000,
}, async (ctx) => {
  if (fleet.skip) return ctx.skip(fleet.skip);
  const base = String(d.logs.find((l) => l.evt === "daemon.started")?.http);
  const asked: Asked[] = [await ask(w.owner, "before the outage", { channel: w.channel })];
  await w.waitReplies(asked[0]!.event);

  const outage = fleet.server!.restart(6000);
  await d.waitLog((l) => l.evt === "queue.lease_renew_failed" || l.evt === "queue.fleet_pass_failed", 30_000); // it is down
  for (let i = 0; i < 3; i++) asked.push(await ask(w.owner, `during the outage ${i}`, { channel: w.channel }));
  const paused = await d.waitLog((l) => l.evt === "intake.paused", 30_000);
  assert.equal(paused.reason, "unreachable");
  const r = await waitFor(
    async () => {
      const res = await fetch(`${base}/readyz`);
      return res.status === 503 && ((await res.json()) as { checks: { name: string; ok: boolean; detail?: string }[] });
    },
    { what: "/readyz to answer 503" },
  );
  assert.match(String(r.checks.find((c) => c.name === "state")?.detail), /state store cannot be written \(unreachable\)/);
  await outage;

  await d.waitLog((l) => l.evt === "intake.resumed", 60_000);
  const v = await assertAnsweredOnce(w, asked, { timeoutMs: 60_000, diagnose: () => turnsSummary(w) });
  assert.equal(v.notices, 0, "no failure notices");
  assert.equal(d.proc.exitCode, null, "the daemon kept running");
});
