/**
 * A fleet daemon whose clock is off. Two daemons of one identity on one PostgreSQL
 * database and the dev relay; one runs with its wall clock 40 s ahead (libfaketime,
 * preloaded into that process only — the daemon's code is the shipped one). 40 s is past
 * the lease period (30 s): a daemon that judged leases by its own clock would think every
 * lease of the other daemon expired and take its scopes. Leases run on the database's
 * clock, so every mention is answered exactly once, no scope is taken over and no turn runs
 * twice. 40 s is also within the relay's 60 s NIP-42 window, so the daemon can log in at
 * all. `doctor` on that machine reports the skew beyond the lease margin; on the other, not.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import pg from "pg";
import { CLI, type DaemonProc } from "../kit/world.js";
import { useFleet } from "./fixtures/fleet.js";
import { needs } from "./fixtures/ci.js";
import { ask, askInThread, assertAnsweredOnce, type Asked } from "../kit/channel-oracle.js";
import { sleep } from "../kit/wait.js";
import { PG_SCHEMA } from "../src/queue/pg-migrations.js";

const LIBFAKETIME = ["x86_64-linux-gnu", "aarch64-linux-gnu"]
  .map((a) => `/usr/lib/${a}/faketime/libfaketimeMT.so.1`)
  .find((p) => existsSync(p));
const faketime = needs(LIBFAKETIME !== undefined, "libfaketime (Debian package libfaketime)");
const AHEAD_S = 40;
const CHANNELS = 3;
const MENTIONS = 12;

const fleet = useFleet({ channels: Array.from({ length: CHANNELS }, (_, i) => `clock-${i}`) });

test(`a daemon whose clock is ${AHEAD_S} s ahead takes no live lease: every mention answered once, no takeover; doctor reports its skew`, {
  timeout: 120_000,
  skip: faketime.skip,
}, async (ctx) => {
  faketime.assertPresent();
  if (fleet.skip) return ctx.skip(fleet.skip);
  const { w, channels } = fleet;
  const { url, env } = await fleet.database();
  const configs = fleet.configs(2, () => ({ agent: { max_concurrent: 2, session_scope: "thread" }, log: { level: "info" } }), "clock");
  // Only the wall clock moves (as NTP drift does); timers keep the real monotonic clock.
  const ahead = { ...env, LD_PRELOAD: LIBFAKETIME!, FAKETIME: `+${AHEAD_S}s`, FAKETIME_DONT_FAKE_MONOTONIC: "1" };
  const [a] = (await fleet.start([configs[0]!], env)) as [DaemonProc];
  const [b] = (await fleet.start([configs[1]!], ahead)) as [DaemonProc];

  const asked: Asked[] = [];
  for (let i = 0; i < MENTIONS; i++) {
    const channel = channels[i % CHANNELS]!;
    const text = `clock m${i} #slow 1500`;
    // Every fourth inside an existing thread (a reply to the agent's reply).
    asked.push(i % 4 === 3 ? await askInThread(w, w.owner, text, { channel, asked }) : await ask(w.owner, text, { channel }));
    await sleep(100); // paced, so that turns of both daemons overlap
  }
  const { notices } = await assertAnsweredOnce(w, asked, { timeoutMs: 60_000 });
  assert.equal(notices, 0);

  const logs = [a, b].flatMap((d) => d.logs);
  assert.deepEqual(
    logs.filter((l) => l.evt === "queue.scope_taken_over" || l.evt === "queue.scope_lost"),
    [],
    "no lease was taken from a live daemon",
  );
  for (const d of [a, b])
    assert.ok(
      d.logs.some((l) => l.evt === "turn.session"),
      `daemon ${d.proc.pid} ran turns too`,
    );
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const turns = (
    await c.query<{ trigger_ids: string[]; attempts: number; state: string }>(`SELECT trigger_ids, attempts, state FROM ${PG_SCHEMA}.turns`)
  ).rows;
  await c.end();
  const mentions = asked.map((a) => a.event);
  assert.deepEqual(
    mentions.map((m) => turns.filter((t) => t.trigger_ids.includes(m.id)).map((t) => t.state)),
    mentions.map(() => ["done"]),
    "each mention ran in one turn",
  );
  // A second attempt is the retry of a turn whose agent failed (a sandbox that did not set
  // up on a loaded machine), never the clock's doing: no scope changed hands (above).
  if (turns.some((t) => t.attempts > 1))
    assert.ok(
      logs.some((l) => l.evt === "agent.start_failed" || l.evt === "agent.crash"),
      "a turn ran again only after its agent failed",
    );

  // doctor, on each machine (the same environment as its daemon).
  const doctor = (configFile: string, e: NodeJS.ProcessEnv) =>
    new Promise<{ status: number | null; stdout: string }>((r) => {
      const child = execFile(
        process.execPath,
        [CLI, "doctor", "-c", configFile],
        { encoding: "utf8", env: { ...process.env, ...e }, timeout: 40_000 },
        (_err, stdout) => r({ status: child.exitCode, stdout }),
      );
    });
  const skewed = await doctor(configs[1]!, ahead);
  assert.equal(skewed.status, 1, skewed.stdout);
  assert.match(
    skewed.stdout,
    /✗ clock +this machine's clock is (3[5-9]|4[0-5])\.\d s ahead of the database's \(more than 10 s\): run NTP on both/,
  );
  assert.match(skewed.stdout, /✓ fleet +2 live daemons/);
  const fine = await doctor(configs[0]!, env);
  assert.match(fine.stdout, /✓ clock +this machine's clock is within \d+ ms of the database's/);
  await Promise.all([a.stop(), b.stop()]);
});
