/**
 * Fleet mode (state.backend: postgres), on a throwaway PostgreSQL server started here
 * (Debian's binaries, as the tests do) and the dev relay:
 *
 *   - throughput with 1, 2 and 3 daemons of one identity: 36 owner mentions over 6
 *     channels posted at once (thread scope, the demo agent thinking 3 s per turn,
 *     max_concurrent 2 per daemon), mentions answered per minute from the first post to
 *     the last reply on the relay (the dev relay's quotas lifted); baseline: the 1-daemon
 *     run; and how many turns each daemon ran;
 *   - lease takeover after a SIGKILL: from the kill of a daemon running a turn to a
 *     survivor taking its scope over; baseline: the lease period;
 *   - `!cancel` → the thread's running turn ends cancelled, in a fleet of two (where the
 *     daemon executing the command may not be the one running the turn) against one daemon;
 *   - the store's cost per accepted mention: PostgreSQL's accept (one statement over the
 *     loopback, the caps included) against SQLite's, through the same QueueBackend interface.
 *
 * Run alone: `node --import tsx bench/fleet.ts` (build first: the daemons are dist/cli.js).
 */
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { World, type DaemonProc } from "../kit/world.js";
import { startPostgres, type PgServer } from "../kit/postgres.js";
import { waitAllAnswered } from "../kit/reliability-helpers.js";
import { mention, fromWire, owner, agent, CHANNEL, tempDir } from "../kit/queue-helpers.js";
import { SqliteStore } from "../src/queue/sqlite-store.js";
import { PostgresStore } from "../src/queue/pg-store.js";
import type { QueueBackend } from "../src/queue/backend.js";
import { FLEET_LEASE_MS } from "../src/queue/pg-leases.js";

const CHANNELS = 6;
const MENTIONS = 36;
const THINK_MS = 3000;
const MAX_CONCURRENT = 2;
const STORE_ACCEPTS = 500;

export interface FleetBench {
  mentions: number;
  think_ms: number;
  max_concurrent: number;
  per_minute: Record<string, number>;
  scaling: Record<string, number>;
  /** Per fleet size, the turns each daemon ran (how the work spread). */
  turns_per_daemon: Record<string, number[]>;
  takeover_ms: number;
  lease_ms: number;
  /** `!cancel` → the running turn ends cancelled: one daemon, and a fleet of two. */
  cancel_ms: { single: Array<{ ms: number; cross: boolean }>; fleet: Array<{ ms: number; cross: boolean }> };
  accept_ms: { sqlite: number[]; postgres: number[] };
}

async function fleetConfig(w: World, n: number, i: number, agent: Record<string, unknown> = {}): Promise<string> {
  return w.writeConfig(
    {
      state_dir: join(w.dir, `state-${n}-${i}`),
      state: { backend: "postgres", url: "${BUZZ_BRIDGE_DATABASE_URL}" },
      agent: { max_concurrent: MAX_CONCURRENT, session_scope: "thread", ...agent },
      log: { level: "info" },
    },
    `fleet-${n}-${i}.yaml`,
  );
}

async function throughput(server: PgServer, n: number): Promise<{ perMinute: number; turns: number[] }> {
  // Without the dev relay's frame quota: polling 6 channels for replies every 500 ms spends
  // one connection's 300 frames a minute in about 20 s, and the measurement then stalls
  // until the quota's window ends, so any run shorter than a minute measured about a minute.
  const w = await World.create({ channelName: "room-0", noLimits: true });
  try {
    const channels = [w.channel];
    for (let i = 1; i < CHANNELS; i++) channels.push(await w.addChannel({ name: `room-${i}` }));
    const url = await server.createDatabase();
    const daemons: DaemonProc[] = [];
    for (let i = 0; i < n; i++)
      daemons.push(await w.startDaemon({}, { configFile: await fleetConfig(w, n, i), env: { BUZZ_BRIDGE_DATABASE_URL: url } }));
    const t0 = performance.now();
    const mentions: Event[] = [];
    for (let i = 0; i < MENTIONS; i++)
      mentions.push(await w.owner.post(`@agent ping ${i} #slow ${THINK_MS}`, { channel: channels[i % CHANNELS] }));
    await waitAllAnswered(w, channels, mentions, 180_000);
    const minutes = (performance.now() - t0) / 60_000;
    const turns = daemons.map((d) => d.logs.filter((l) => l.evt === "turn.end").length);
    await Promise.all(daemons.map((d) => d.stop()));
    return { perMinute: Math.round((MENTIONS / minutes) * 10) / 10, turns };
  } finally {
    await w.close();
  }
}

async function takeover(server: PgServer): Promise<number> {
  const w = await World.create({ channelName: "room-0" });
  try {
    const url = await server.createDatabase();
    const env = { BUZZ_BRIDGE_DATABASE_URL: url };
    const a = await w.startDaemon({}, { configFile: await fleetConfig(w, 9, 0), env });
    const b = await w.startDaemon({}, { configFile: await fleetConfig(w, 9, 1), env });
    // One long turn: the survivor has free slots, so the time measured is the lease's.
    await w.owner.post("@agent long job #slow 60000");
    const [victim, survivor] = await Promise.race([
      a.waitLog((l) => l.evt === "turn.session", 30_000).then(() => [a, b] as const),
      b.waitLog((l) => l.evt === "turn.session", 30_000).then(() => [b, a] as const),
    ]);
    const killedAt = performance.now();
    victim.proc.kill("SIGKILL");
    await survivor.waitLog((l) => l.evt === "queue.scope_taken_over", FLEET_LEASE_MS + 30_000);
    const ms = Math.round(performance.now() - killedAt);
    await survivor.stop();
    return ms;
  } finally {
    await w.close();
  }
}

/**
 * `!cancel` in a thread whose slow turn runs: from the command's publish to the turn's
 * `turn.end` (cancelled) on the daemon running it. In a fleet of `n` daemons, which one
 * executes the command is the fleet's race; each sample says whether it was the one running
 * the turn (`cross: false`) or another, whose cancel reaches the turn through the database.
 */
export async function cancelStops(server: PgServer, n: number, samples: number): Promise<Array<{ ms: number; cross: boolean }>> {
  const w = await World.create({ channelName: "room-0", noLimits: true });
  try {
    const url = await server.createDatabase();
    const daemons: DaemonProc[] = [];
    for (let i = 0; i < n; i++)
      daemons.push(
        await w.startDaemon(
          {},
          { configFile: await fleetConfig(w, 20 + n, i, { idle_timeout: "90s" }), env: { BUZZ_BRIDGE_DATABASE_URL: url } },
        ),
      );
    const out: Array<{ ms: number; cross: boolean }> = [];
    for (let s = 0; s < samples; s++) {
      const root = await w.owner.post(`@agent cancel me ${s} #slow 60000`);
      // The turn runs once its agent session is ready (turn.session); the prompt follows at once.
      const inThread = (l: Record<string, unknown>) => String(l.scope ?? "").endsWith(root.id);
      const holder = await Promise.any(daemons.map((d) => d.waitLog((l) => l.evt === "turn.session" && inThread(l), 30_000).then(() => d)));
      const since = holder.logs.length;
      const t0 = performance.now();
      const cmd = await w.owner.post("!cancel", { replyTo: root });
      const end = await holder.waitLog((l) => holder.logs.indexOf(l) >= since && l.evt === "turn.end" && inThread(l), 60_000);
      const ms = Math.round(performance.now() - t0);
      if (end.status !== "cancelled") throw new Error(`fleet bench: the cancelled turn ended ${String(end.status)}`);
      const executor = await Promise.any(
        daemons.map((d) => d.waitLog((l) => l.evt === "gate.control" && l.event === cmd.id, 30_000).then(() => d)),
      );
      out.push({ ms, cross: executor !== holder });
    }
    await Promise.all(daemons.map((d) => d.stop()));
    return out;
  } finally {
    await w.close();
  }
}

/** The caps as the daemon passes them while the queue is far from full: the scope's (queue.scope_cap) only. */
const CAPS = { scope: 500 };

async function acceptCost(store: QueueBackend): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < STORE_ACCEPTS; i++) {
    const ev = fromWire(mention(owner, `m${i}`));
    const t0 = performance.now();
    await store.accept(ev, CHANNEL, `${CHANNEL}/${ev.id}`, CAPS);
    out.push(performance.now() - t0);
  }
  await store.close();
  return out;
}

export async function benchFleet(): Promise<FleetBench> {
  const started = await startPostgres();
  if ("skip" in started) throw new Error(started.skip);
  const server = started;
  const tmp = tempDir("bb-bench-fleet-");
  try {
    const perMinute: Record<string, number> = {};
    const turnsPerDaemon: Record<string, number[]> = {};
    for (const n of [1, 2, 3]) {
      const r = await throughput(server, n);
      perMinute[String(n)] = r.perMinute;
      turnsPerDaemon[String(n)] = r.turns;
    }
    const scaling = Object.fromEntries(Object.entries(perMinute).map(([n, v]) => [n, Math.round((v / perMinute["1"]!) * 100) / 100]));
    const takeoverMs = await takeover(server);
    const cancelMs = { single: await cancelStops(server, 1, 3), fleet: await cancelStops(server, 2, 6) };
    const sqlite = await acceptCost(SqliteStore.open(join(tmp.dir, "sqlite")));
    const postgres = await acceptCost(await PostgresStore.open({ url: await server.createDatabase(), identity: agent.pk }));
    return {
      mentions: MENTIONS,
      think_ms: THINK_MS,
      max_concurrent: MAX_CONCURRENT,
      per_minute: perMinute,
      scaling,
      turns_per_daemon: turnsPerDaemon,
      takeover_ms: takeoverMs,
      lease_ms: FLEET_LEASE_MS,
      cancel_ms: cancelMs,
      accept_ms: { sqlite, postgres },
    };
  } finally {
    await server.stop();
    tmp.cleanup();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await benchFleet();
  const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  console.log(
    JSON.stringify({ ...r, accept_ms: { sqlite_median: med(r.accept_ms.sqlite), postgres_median: med(r.accept_ms.postgres) } }, null, 2),
  );
}
