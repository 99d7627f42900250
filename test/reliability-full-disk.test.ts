/**
 * Reliability: the state directory's disk fills up, and a file lock someone else holds on
 * the queue. Both are back-pressure, not a crash: the daemon stops taking events, says so
 * (`intake.paused`, `/readyz` 503 naming the state store), keeps running, and once the
 * store takes writes again it resumes (`intake.resumed`) — every mention posted meanwhile
 * answered exactly once, as the channel shows it (kit/channel-oracle.ts).
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Database } from "../src/base/sqlite.js";
import { join } from "node:path";
import { World, type DaemonProc } from "../kit/world.js";
import { ask, assertAnsweredOnce, type Asked } from "../kit/channel-oracle.js";
import { tinyDisk, type TinyDisk } from "./fixtures/tiny-disk.js";
import { turnsSummary } from "../kit/reliability-helpers.js";
import { waitFor } from "../kit/wait.js";

const worlds: World[] = [];
const disks: TinyDisk[] = [];
const daemons: DaemonProc[] = [];
after(async () => {
  // The daemons first, then the mount, then the world's directory it lives in.
  for (const d of daemons) await d.stop();
  for (const d of disks) d.cleanup();
  for (const w of worlds) await w.close();
});

async function readyz(d: DaemonProc): Promise<{ status: number; state?: { ok: boolean; detail?: string } }> {
  const base = String(d.logs.find((l) => l.evt === "daemon.started")?.http);
  const res = await fetch(`${base}/readyz`);
  const body = (await res.json()) as { checks: { name: string; ok: boolean; detail?: string }[] };
  return { status: res.status, state: body.checks.find((c) => c.name === "state") };
}

/** `/readyz` answers 503, its state check naming the store. */
async function notReady(d: DaemonProc): Promise<void> {
  const r = await waitFor(
    async () => {
      const x = await readyz(d);
      return x.status === 503 && x;
    },
    { what: "/readyz to answer 503" },
  );
  assert.equal(r.state?.ok, false);
  assert.match(String(r.state?.detail), /state store cannot be written/);
}

test("the state disk fills up: intake pauses (/readyz 503), a restart still starts, and with space back every mention is answered once", {
  timeout: 150_000,
}, async () => {
  const w = await World.create();
  worlds.push(w);
  const disk = tinyDisk(w.dir);
  disks.push(disk);
  const configFile = w.writeConfig({
    state_dir: disk.path,
    http: { listen: "127.0.0.1:0" },
    relay: { presence: false },
    log: { level: "info" },
  });
  let d = await w.startDaemon({}, { configFile });
  daemons.push(d);
  const asked: Asked[] = [await ask(w.owner, "before the disk fills", { channel: w.channel })];
  await w.waitReplies(asked[0]!.event);

  disk.fill(d.proc.pid!);
  for (let i = 0; i < 4; i++) asked.push(await ask(w.owner, `while full ${i}`, { channel: w.channel }));
  const paused = await d.waitLog((l) => l.evt === "intake.paused", 30_000);
  assert.ok(["disk full", "I/O error"].includes(String(paused.reason)), `paused for the disk (${disk.how}): ${JSON.stringify(paused)}`);
  await notReady(d);
  assert.equal(d.proc.exitCode, null, "the daemon is still running");

  // Restarted while the disk is still full: it starts, and pauses again on the same mentions.
  assert.equal(await d.stop(), 0);
  d = await w.startDaemon({}, { configFile });
  daemons.push(d);
  if (disk.how === "rlimit") disk.fill(d.proc.pid!);
  await d.waitLog((l) => l.evt === "intake.paused", 30_000);
  await notReady(d);

  disk.free(d.proc.pid!);
  await d.waitLog((l) => l.evt === "intake.resumed", 30_000);
  const v = await assertAnsweredOnce(w, asked, { timeoutMs: 60_000, diagnose: () => turnsSummary(w) });
  assert.equal(v.notices, 0, "no failure notices");
  await waitFor(async () => (await readyz(d)).status === 200, { what: "/readyz to answer 200 again" });
  assert.equal(await d.stop(), 0);
});

test("the queue file locked by another process: intake pauses, and resumes once the lock is gone; every mention answered once", {
  timeout: 120_000,
}, async () => {
  const w = await World.create();
  worlds.push(w);
  const d = await w.startDaemon({ relay: { presence: false }, log: { level: "info" } });
  daemons.push(d);
  const asked: Asked[] = [await ask(w.owner, "before the lock", { channel: w.channel })];
  await w.waitReplies(asked[0]!.event);

  // Someone opens the queue with sqlite3 and holds a write transaction (past the daemon's 5 s busy wait).
  const intruder = new Database(join(w.dir, "state", "queue.db"));
  intruder.exec("BEGIN IMMEDIATE");
  try {
    for (let i = 0; i < 3; i++) asked.push(await ask(w.owner, `while locked ${i}`, { channel: w.channel }));
    const paused = await d.waitLog((l) => l.evt === "intake.paused", 30_000);
    assert.equal(paused.reason, "locked");
  } finally {
    intruder.exec("ROLLBACK");
    intruder.close();
  }
  await d.waitLog((l) => l.evt === "intake.resumed", 30_000);
  const v = await assertAnsweredOnce(w, asked, { timeoutMs: 60_000, diagnose: () => turnsSummary(w) });
  assert.equal(v.notices, 0, "no failure notices");
  assert.equal(await d.stop(), 0);
});
