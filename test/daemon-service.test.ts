/**
 * The daemon as a service: health and metrics over `http.listen`, presence,
 * graceful SIGTERM (a turn in flight completes or re-runs after restart, answered once),
 * SIGHUP reload (new policy for the next mention; an invalid file is refused), owner
 * `!status`, and start-up failures that must exit 2 with a message naming the problem.
 * Real parts throughout: dev relay, `buzz-bridge run` subprocess, demo agent, proxy.
 *
 * The relay "goes away" through a TCP forwarder between daemon and dev relay that the test
 * closes and reopens on the same port, so the relay itself (and the people's connections)
 * keep running. The tests share one World and one daemon for health, metrics, !status and
 * reload (daemon starts are the slow part), but none relies on another having run: each
 * sets the config it needs, counts metrics as differences, and the tests that stop a
 * daemon start their own.
 */
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, Socket, type Server } from "node:net";
import { join } from "node:path";
import { Database } from "../src/base/sqlite.js";
import type { Event } from "nostr-tools";
import { stringify } from "yaml";
import { RawClient } from "../kit/raw-client.js";
import { STORE_FILE } from "../src/queue/index.js";
import { KIND } from "../src/nostr/kinds.js";
import { World, type DaemonProc } from "../kit/world.js";
import { waitFor } from "../kit/wait.js";

let w: World;

/** A TCP forwarder to the dev relay that can be taken down and brought back on the same port. */
class Forwarder {
  port = 0;
  private server?: Server;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly targetPort: number) {}

  get url(): string {
    return `ws://127.0.0.1:${this.port}`;
  }

  async up(): Promise<void> {
    const server = createServer((client) => {
      const upstream = new Socket();
      upstream.connect(this.targetPort, "127.0.0.1");
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  async down(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    for (const sock of this.sockets) sock.destroy();
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }
}

async function getJson(
  url: string,
): Promise<{ status: number; body: { status: string; checks: { name: string; ok: boolean; detail?: string }[] } }> {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as never };
}

/** Polls `/readyz` until its status is `want`; returns the last answer. */
async function waitReady(base: string, want: number, timeoutMs = 30_000): Promise<Awaited<ReturnType<typeof getJson>>> {
  let last: Awaited<ReturnType<typeof getJson>> | undefined;
  const probe = async () => {
    last = await getJson(`${base}/readyz`).catch(() => last);
    return last?.status === want && last;
  };
  return waitFor(probe, { timeoutMs, intervalMs: 200, what: () => `/readyz to answer ${want}; last: ${JSON.stringify(last)}` });
}

/** The value of one Prometheus sample line (0 when absent). */
function sample(text: string, name: string, labels: Record<string, string>): number {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    const body = line.slice(name.length + 1, line.indexOf("}"));
    const have = Object.fromEntries([...body.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(line.slice(line.indexOf("}") + 1).trim());
  }
  return 0;
}

function replies(ev: Event): Promise<Event[]> {
  return w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] });
}

// ---------------------------------------------------------------------------------------
// one daemon behind the forwarder: health, metrics, !status, SIGHUP, presence

let fwd: Forwarder;
let d: DaemonProc;
let base: string;
let presence: RawClient;
let hupChannel: string;

/** The ops daemon's config; `hupRespondTo` is the policy of the reload test's channel. */
function opsConfig(hupRespondTo: string): Record<string, unknown> {
  return {
    relay: { url: fwd.url },
    http: { listen: "127.0.0.1:0" },
    defaults: { respond_to: "owner-only", on_denied: "react" },
    // Its own channels only: the tests that start daemons of their own use channels of their own.
    channels: [{ id: w.channel }, { id: hupChannel, respond_to: hupRespondTo }],
  };
}

/** Subscribes live to the agent's presence (an ephemeral kind, not stored): before the daemon starts. */
async function presenceWatch(): Promise<RawClient> {
  const c = await RawClient.authed(w.relay.url, w.owner.sk);
  c.send(["REQ", "presence", { kinds: [KIND.presence], authors: [w.agent.pk] }]);
  await c.next((f) => f[0] === "EOSE" && f[1] === "presence", 10_000);
  return c;
}

/** Writes the ops daemon's config with the reload channel's policy and waits until the daemon has reloaded it. */
async function reloadOps(hupRespondTo: string): Promise<void> {
  writeFileSync(d.configFile, stringify(w.config(opsConfig(hupRespondTo))));
  const n = d.logs.length;
  d.proc.kill("SIGHUP");
  await d.waitLog((l) => l.evt === "config.reloaded" && d.logs.indexOf(l) >= n);
}

// One root-level hook each way: Node 20 does not reliably run a second root-level `before`
// after the first one's promise settles.
before(async () => {
  w = await World.create({ channelName: "ops-room" });
  fwd = new Forwarder(w.relay.port);
  await fwd.up();
  hupChannel = await w.addChannel({ name: "hup-room" });
  presence = await presenceWatch();
});
after(async () => {
  await presence?.close();
  await fwd?.down();
  await w?.close();
});

// Every daemon of this file runs as the same identity, and a daemon refuses to start while another of its
// identity is live (its instance beacon): the ops daemon stops before the tests that start their own.
describe("one daemon behind the forwarder: health, metrics, !status, SIGHUP", () => {
  before(async () => {
    d = await w.startDaemon(opsConfig("owner-only"));
  });
  after(async () => {
    await d?.stop();
  });

  test("presence online at start; /healthz and /readyz answer 200 once subscribed", async () => {
    const started = d.logs.find((l) => l.evt === "daemon.started")!;
    base = String(started.http);
    assert.match(base, /^http:\/\/127\.0\.0\.1:\d+$/, "daemon.started names the bound http URL (port 0 picks one)");
    const online = await presence.next((f) => f[0] === "EVENT" && f[1] === "presence", 15_000);
    assert.equal((online[2] as Event).content, "online");
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
    const ready = await waitReady(base, 200);
    assert.equal(ready.body.status, "ready");
    assert.ok(
      ready.body.checks.every((c) => c.ok),
      JSON.stringify(ready.body),
    );
  });

  test("/metrics counts a denied and an answered mention", async () => {
    const metrics = async () => {
      const text = await (await fetch(`${base}/metrics`)).text();
      return {
        denied: sample(text, "buzz_bridge_gate_decisions_total", { decision: "deny", reason: "not-owner" }),
        accepted: sample(text, "buzz_bridge_gate_decisions_total", { decision: "accept" }),
        answered: sample(text, "buzz_bridge_turns_total", { outcome: "answered" }),
        measured: sample(text, "buzz_bridge_turn_duration_seconds_count", { outcome: "answered" }),
      };
    };
    const before = await metrics();
    const asked = await w.owner.post("@agent status of the release?");
    const denied = await w.stranger.post("@agent deploy please");
    await w.waitReaction(denied, "🔒");
    await w.waitReply(asked);
    await w.waitReaction(asked, "✅");
    const now = await metrics();
    assert.deepEqual(
      {
        denied: now.denied - before.denied,
        accepted: now.accepted - before.accepted,
        answered: now.answered - before.answered,
        measured: now.measured - before.measured,
      },
      { denied: 1, accepted: 1, answered: 1, measured: 1 },
      "one denial, one accepted mention, one answered turn measured",
    );
  });

  test("/readyz flips to 503 naming the relay when the relay goes away, and back to 200 when it returns", async () => {
    await fwd.down();
    const down = await waitReady(base, 503);
    assert.equal(down.body.status, "not ready");
    const relay = down.body.checks.find((c) => c.name === "relay");
    assert.ok(relay && !relay.ok, JSON.stringify(down.body));
    assert.match(relay.detail ?? "", /relay connection is/);
    assert.ok(
      down.body.checks.filter((c) => !c.ok).every((c) => c.name === "relay"),
      "only the relay check fails",
    );
    assert.equal((await fetch(`${base}/healthz`)).status, 200, "liveness does not depend on the relay");
    await fwd.up();
    await waitReady(base, 200, 60_000);
  });

  test("!status from the owner publishes a 40099 in the thread with in-flight and queue depth; from anyone else, none", async () => {
    // Held until the test has its answers: the turn is surely in flight when !status is read.
    const release = join(w.dir, "release-status");
    const slow = await w.owner.post(`@agent #hold ${release} check CI`, { channel: hupChannel });
    await w.waitReaction(slow, "👀");
    const status = await w.owner.post("!status", { channel: hupChannel, replyTo: slow });
    const [sys] = await w.waitEvents({ kinds: [KIND.system], authors: [w.agent.pk], "#e": [status.id] }, (e) => e.length >= 1);
    const payload = JSON.parse(sys!.content) as Record<string, unknown>;
    assert.equal(payload.type, "control.status");
    assert.equal(payload.in_flight, 1, sys!.content);
    assert.equal(typeof payload.queued, "number");
    assert.equal(payload.actor, w.owner.pk);

    const notOwner = await w.teammate.post("!status", { channel: hupChannel, replyTo: slow });
    await d.waitLog((l) => l.evt === "gate.denied" && l.event === notOwner.id);
    writeFileSync(release, "");
    await w.waitReply(slow);
    assert.deepEqual(await w.query({ kinds: [KIND.system], "#e": [notOwner.id] }), [], "no 40099 for a non-owner");
  });

  test("SIGHUP applies a channel's new respond_to to the next mention", async () => {
    await reloadOps("owner-only");
    const before = await w.teammate.post("@agent can you look?", { channel: hupChannel });
    const denied = await d.waitLog((l) => l.evt === "gate.denied" && l.event === before.id);
    assert.equal(denied.reason, "not-owner");

    await reloadOps("anyone");
    const after = await w.teammate.post("@agent can you look now?", { channel: hupChannel });
    await w.waitReply(after);
  });

  test("SIGHUP with an invalid config is refused and logged; the old config stays in force", async () => {
    await reloadOps("anyone");
    const good = readFileSync(d.configFile, "utf8");
    assert.match(good, /respond_to: anyone/);
    writeFileSync(d.configFile, good.replace("respond_to: anyone", "respond_to: everyone"));
    const n = d.logs.length;
    d.proc.kill("SIGHUP");
    const refused = await d.waitLog((l) => l.evt === "config.reload_refused" && d.logs.indexOf(l) >= n);
    assert.match(JSON.stringify(refused.errors), /respond_to/, "the log names the bad key");
    const ev = await w.stranger.post("@agent still there?", { channel: hupChannel });
    await w.waitReply(ev);
    assert.equal(d.proc.exitCode, null, "still running");
  });
});

test("presence offline at shutdown; SIGTERM exits 0", async (t) => {
  const watch = await presenceWatch();
  const channel = await w.addChannel({ name: "presence-room" });
  const own = await w.startDaemon({ state_dir: join(w.dir, "state-presence"), channels: [{ id: channel }] });
  t.after(async () => {
    await own.stop();
    await watch.close();
  });
  await watch.next((f) => f[0] === "EVENT" && f[1] === "presence" && (f[2] as Event).content === "online", 15_000);
  assert.equal(await own.stop(), 0);
  const offline = await watch.next((f) => f[0] === "EVENT" && f[1] === "presence" && (f[2] as Event).content === "offline", 15_000);
  assert.equal((offline[2] as Event).pubkey, w.agent.pk);
});

// ---------------------------------------------------------------------------------------
// SIGTERM during a turn

test("SIGTERM mid-turn with a 1s grace: exit 0, the turn re-runs after restart and is answered exactly once", async () => {
  const termChannel = await w.addChannel({ name: "term-room" });
  const term = { shutdown_grace: "1s", relay: { presence: false }, state_dir: join(w.dir, "state-term"), channels: [{ id: termChannel }] };
  const configFile = w.writeConfig(term, "term.yaml");
  const first = await w.startDaemon({}, { configFile });
  try {
    // Held past the SIGTERM; let go before the restart, so the turn that runs again can end.
    const release = join(w.dir, "release-term");
    const ev = await w.owner.post(`@agent #hold ${release} summarise the incident`, { channel: termChannel });
    await w.waitReaction(ev, "👀");
    assert.equal(await first.stop("SIGTERM"), 0);
    const requeued = first.logs.find((l) => l.evt === "daemon.turns_requeued");
    assert.equal(requeued?.count, 1, "the running turn was cancelled and kept for after the restart");
    assert.deepEqual(await replies(ev), [], "no reply from the interrupted turn");
    writeFileSync(release, "");

    const restarted = await w.startDaemon({}, { configFile });
    try {
      assert.ok(restarted.logs.some((l) => l.evt === "queue.recovered"));
      await w.waitReply(ev, 30_000);
      await w.waitReaction(ev, "✅", 30_000);
    } finally {
      await restarted.stop();
    }
  } finally {
    await first.stop();
  }
});

test("SIGTERM mid-turn with a long grace: the turn completes before the daemon exits 0", async (t) => {
  const termChannel = await w.addChannel({ name: "grace-room" });
  const configFile = w.writeConfig(
    { shutdown_grace: "30s", relay: { presence: false }, state_dir: join(w.dir, "state-grace"), channels: [{ id: termChannel }] },
    "grace.yaml",
  );
  const dd = await w.startDaemon({}, { configFile });
  t.after(() => dd.stop());
  // Held until the daemon is shutting down: the turn ends inside the grace, not before the signal.
  const release = join(w.dir, "release-grace");
  const ev = await w.owner.post(`@agent #hold ${release} draft the notes`, { channel: termChannel });
  await w.waitReaction(ev, "👀");
  const stopped = dd.stop("SIGTERM");
  await dd.waitLog((l) => l.evt === "daemon.stopping");
  writeFileSync(release, "");
  assert.equal(await stopped, 0);
  assert.equal((await replies(ev)).length, 1, "answered before exit");
  assert.ok(!dd.logs.some((l) => l.evt === "daemon.turns_requeued"), "nothing left to re-run");
});

// ---------------------------------------------------------------------------------------
// start-up failures

/** Separate state per start-up test: they run side by side. */
function ownState(name: string): Record<string, unknown> {
  return { state_dir: join(w.dir, `state-${name}`), relay: { presence: false } };
}

describe("start-up", { concurrency: true }, () => {
  test("relay down at start-up: the daemon waits for it instead of exiting, then answers", async (t) => {
    const late = new Forwarder(w.relay.port);
    await late.up();
    await late.down(); // a port where nothing listens yet
    t.after(() => late.down());
    const channel = await w.addChannel({ name: "late-room" });
    const overrides = { ...ownState("late"), relay: { url: late.url, presence: false } };
    const patient = await w.startDaemon({}, { waitStarted: false, configFile: w.writeConfig(overrides, "late.yaml") });
    t.after(() => patient.stop());
    await patient.waitLog((l) => l.evt === "daemon.discovery_retry");
    await late.up();
    await patient.waitLog((l) => l.evt === "daemon.started", 40_000);
    const ev = await w.owner.post("@agent are you up now?", { channel });
    await w.waitReply(ev);
    assert.equal(await patient.stop(), 0);
  });

  test("SIGTERM while waiting for the relay at start-up: a clean stop, exit 0", async (t) => {
    const nowhere = new Forwarder(w.relay.port);
    await nowhere.up();
    await nowhere.down();
    const overrides = { ...ownState("nowhere"), relay: { url: nowhere.url, presence: false } };
    const waiting = await w.startDaemon({}, { waitStarted: false, configFile: w.writeConfig(overrides, "nowhere.yaml") });
    t.after(() => waiting.stop());
    await waiting.waitLog((l) => l.evt === "relay.disconnected");
    assert.equal(await waiting.stop("SIGTERM"), 0);
    assert.ok(
      waiting.logs.some((l) => l.evt === "daemon.shutdown"),
      waiting.raw().slice(-2000),
    );
    assert.ok(!waiting.logs.some((l) => l.evt === "daemon.start_failed"));
  });

  test("http.listen on a port in use: a clear message and exit 2", async () => {
    const busy = createServer().listen(0, "127.0.0.1");
    await new Promise((r) => busy.once("listening", r));
    const port = (busy.address() as { port: number }).port;
    try {
      const overrides = { ...ownState("busy"), http: { listen: `127.0.0.1:${port}` } };
      const dd = await w.startDaemon({}, { waitStarted: false, configFile: w.writeConfig(overrides, "busy.yaml") });
      assert.equal(await dd.exited, 2);
      assert.match(dd.raw(), new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: address already in use`));
    } finally {
      busy.close();
    }
  });

  test("a state DB from a newer version: a message naming the file and exit 2", async () => {
    const newer = join(w.dir, "state-newer");
    mkdirSync(newer);
    const db = new Database(join(newer, STORE_FILE));
    db.exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES ('schema_version', '99')");
    db.close();
    const a = await w.startDaemon({}, { waitStarted: false, configFile: w.writeConfig({ state_dir: newer }, "newer.yaml") });
    assert.equal(await a.exited, 2);
    assert.ok(a.raw().includes(`${join(newer, STORE_FILE)} was written by a newer buzz-bridge`), a.raw().slice(-2000));
  });

  test("a state_dir that cannot be created: a message naming it and exit 2", async () => {
    const file = join(w.dir, "not-a-dir");
    writeFileSync(file, "");
    const stateDir = join(file, "state");
    const c = await w.startDaemon({}, { waitStarted: false, configFile: w.writeConfig({ state_dir: stateDir }, "notdir.yaml") });
    assert.equal(await c.exited, 2);
    assert.ok(c.raw().includes(`cannot create state_dir ${stateDir}: ENOTDIR`), c.raw().slice(-2000));
  });

  test("a state DB that is not a database: a message naming the file and exit 2", async () => {
    const garbage = join(w.dir, "state-garbage");
    mkdirSync(garbage);
    writeFileSync(join(garbage, STORE_FILE), "this is not an sqlite file, just text that is long enough to have a header ".repeat(20));
    const b = await w.startDaemon({}, { waitStarted: false, configFile: w.writeConfig({ state_dir: garbage }, "garbage.yaml") });
    assert.equal(await b.exited, 2);
    assert.ok(b.raw().includes(`cannot open queue database ${join(garbage, STORE_FILE)}`), b.raw().slice(-2000));
  });
});
