/**
 * The agent sandbox, as a prompt-injected agent would meet it: a fixture agent
 * (test/fixtures/escape-agent.mjs), driven by a mention, tries to read the bridge's key
 * file and queue.db, find the daemon in /proc and read its cmdline and environment,
 * connect to another session's link socket, write outside its cwd and read another
 * channel's working directory, and replies with what it got through the session's MCP
 * proxy. Under bubblewrap every attempt fails while the agent's own cwd and HOME work and
 * its reply arrives (so the proxy and the link work from inside); with `sandbox: off` the
 * same attempts succeed, so the test can fail. On the network side (agent.network: on, its
 * own namespace through slirp4netns): the daemon's HTTP port (/status, /metrics) and another
 * service on the host's loopback are out of reach, while a loopback port the config names
 * for the agent (`agent.env`) is carried in.
 *
 * The world lives under /var/tmp, not the temp dir: the sandbox's private /tmp would hide
 * it all by itself and the hiding of configured paths would go untested.
 *
 * bubblewrap must be installed (`.ci/run` installs it); `agent.sandbox: bubblewrap` makes
 * the daemon refuse to start without it, so these tests fail, never skip, where it is missing.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo, type Server } from "node:net";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { World, REPO, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { ConfigError, loadConfigText } from "../src/config/load.js";
import { AgentPool, AgentSandbox, AgentStartError, channelDirName } from "../src/agent/index.js";
import { demoPoolOptions } from "./fixtures/agent-helpers.js";
import { captureLogger } from "../kit/queue-helpers.js";
import { waitFor } from "../kit/wait.js";

const ESCAPE_AGENT = join(REPO, "test", "fixtures", "escape-agent.mjs");
const NOBODY = 65534;

interface Layout {
  w: World;
  configFile: string;
  keyFile: string;
  stateDir: string;
  otherChannel: string;
  /** Services on the host's loopback: one the config names for the agent (allowed), one it does not. */
  allowedPort: number;
  otherPort: number;
  close(): Promise<void>;
}

/** A service on 127.0.0.1 that greets each connection with one line. */
async function greeter(line: string): Promise<Server> {
  // A client that hangs up first resets the connection: not this test's concern.
  const server = createServer((c) => c.on("error", () => undefined).end(`${line}\n`));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return server;
}

/** The systemd layout in small: key and config alone in etc/, state/, work/{channel}; two channels. */
async function layout(): Promise<Layout> {
  const w = await World.create({ baseDir: "/var/tmp" });
  const etc = join(w.dir, "etc");
  mkdirSync(etc, { recursive: true });
  const keyFile = join(etc, "agent.nsec");
  writeFileSync(keyFile, `${w.agent.nsec}\n`, { mode: 0o600 });
  const otherChannel = await w.addChannel({ name: "other-room" });
  const other = join(w.dir, "work", channelDirName({ id: otherChannel, name: "other-room" }));
  mkdirSync(other, { recursive: true });
  writeFileSync(join(other, "plan.txt"), "the other team's plan\n");
  // A team's shared cache beside the channels' directories (hidden with them), given to
  // agents read-only with agent.sandbox_binds.
  mkdirSync(join(w.dir, "work", "shared"));
  writeFileSync(join(w.dir, "work", "shared", "cache.txt"), "shared cache\n");
  const allowed = await greeter("hello from the allowed port");
  const elsewhere = await greeter("hello from another loopback service");
  const port = (s: Server) => (s.address() as AddressInfo).port;
  return {
    w,
    configFile: join(etc, "bridge.yaml"),
    keyFile,
    stateDir: join(w.dir, "state"),
    otherChannel,
    allowedPort: port(allowed),
    otherPort: port(elsewhere),
    close: async () => {
      allowed.close();
      elsewhere.close();
      await w.close();
    },
  };
}

function startDaemon(l: Layout, agent: Record<string, unknown>, o: { uid?: number; channels?: unknown[] } = {}): Promise<DaemonProc> {
  const cfg = l.w.config({
    agent: {
      command: process.execPath,
      args: [ESCAPE_AGENT],
      ...agent,
      env: { LOCAL_API: `http://127.0.0.1:${l.allowedPort}/v1`, ...(agent.env as Record<string, string> | undefined) },
    },
    http: { listen: "127.0.0.1:0" },
    ...(o.channels ? { channels: o.channels } : {}),
  });
  const identity = cfg.identity as Record<string, unknown>;
  delete identity.secret_key;
  identity.secret_key_file = l.keyFile;
  writeFileSync(l.configFile, JSON.stringify(cfg), { mode: 0o600 });
  if (o.uid !== undefined) chownTree(l.w.dir, o.uid);
  return l.w.startDaemon({}, { configFile: l.configFile, uid: o.uid, gid: o.uid });
}

function chownTree(dir: string, uid: number): void {
  chownSync(dir, uid, uid);
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) chownTree(p, uid);
    else chownSync(p, uid, uid);
  }
}

/** The other channel gets a session first, so another session's link socket exists; its path and the other agent's interfaces. */
async function otherSession(l: Layout): Promise<{ socket: string; ifaces: string[] }> {
  const ev = await l.w.owner.post("@agent hello from the other room", { channel: l.otherChannel });
  const reply = await l.w.waitReply(ev, 30_000);
  assert.doesNotMatch(
    reply.content,
    /^\(no proxy\)/,
    "the other channel's agent replied through its proxy and link (also without a network)",
  );
  const root = join(l.stateDir, "link");
  const socks = readdirSync(root)
    .map((d) => join(root, d, "link.sock"))
    .filter((p) => existsSync(p));
  assert.equal(socks.length, 1, `one session, one link socket (found ${socks.join(", ") || "none"})`);
  return { socket: socks[0]!, ifaces: (JSON.parse(reply.content) as { ifaces: string[] }).ifaces };
}

interface Attempts {
  /** Each attempt's outcome: "ok: …" or "failed: <code>". */
  at: Record<string, string>;
  ifaces: string[];
  otherIfaces: string[];
}

async function tryEscape(l: Layout, d: DaemonProc): Promise<Attempts> {
  const { socket, ifaces: otherIfaces } = await otherSession(l);
  const targets = {
    key: l.keyFile,
    queue: join(l.stateDir, "queue.db"),
    daemonPid: d.proc.pid,
    configFile: l.configFile,
    socket,
    outside: join(l.w.dir, "escaped.txt"),
    otherCwd: join(l.w.dir, "work", channelDirName({ id: l.otherChannel, name: "other-room" })),
    otherFile: "plan.txt",
    shared: join(l.w.dir, "work", "shared", "cache.txt"),
    daemonHttp: Number(new URL(String(d.logs.find((x) => x.evt === "daemon.started")!.http)).port),
    loopback: l.otherPort,
    allowed: l.allowedPort,
  };
  const ev: Event = await l.w.owner.post(`@agent #escape ${JSON.stringify(targets)}`);
  const reply = await l.w.waitReply(ev, 30_000);
  console.log(`escape attempts: ${reply.content}`);
  assert.doesNotMatch(reply.content, /^\(no proxy\)/, "the agent replied through its MCP proxy and the session's link");
  const all = await l.w.query({ kinds: [KIND.message], authors: [l.w.agent.pk], "#e": [ev.id] });
  assert.equal(all.length, 1, "one reply");
  const { ifaces, ...at } = JSON.parse(reply.content) as Record<string, string> & { ifaces: string[] };
  return { at: at as Record<string, string>, ifaces, otherIfaces };
}

const ESCAPES = ["key", "queue", "daemonCmdline", "daemonEnviron", "socket", "outside", "otherCwd"] as const;
/** What only a network namespace of its own keeps out: the daemon's /status and /metrics, other loopback services. */
const LOOPBACK_ESCAPES = ["daemonHttp", "loopback"] as const;

/**
 * Contained; on the network side as the daemon says. The agent that tried has a network of
 * its own (lo, and slirp4netns' tap0) and loopback is out of reach; or it sees the host's
 * interfaces, the daemon warned that slirp4netns could not give it one (`agent.sandbox`
 * state host-network, said per agent start: one start may fall back while the next gets its
 * own), and the host's loopback is indeed in reach (the warning is true).
 */
function assertContained(l: Layout, { at: r, ifaces }: Attempts, d: DaemonProc): void {
  const hostNetwork = ifaces.some((i) => i !== "lo" && i !== "tap0");
  if (hostNetwork)
    assert.ok(
      d.logs.some((x) => x.evt === "agent.sandbox" && x.state === "host-network"),
      `the agent is on the host's network (interfaces ${ifaces.join(", ")}) and the daemon did not warn of it`,
    );
  for (const name of [...ESCAPES, "unmount", "keyAfterUnmount"])
    assert.match(r[name]!, /^failed: /, `${name}: the sandbox let it through: ${r[name]}`);
  for (const name of LOOPBACK_ESCAPES)
    assert.match(
      r[name]!,
      hostNetwork ? /^ok: / : /^failed: /,
      `${name}: ${hostNetwork ? "the daemon warned of the host's network, yet" : "the sandbox let it through:"} ${r[name]}`,
    );
  assert.match(r.procList!, /^ok: [1-9] processes$/, "/proc lists only the sandbox's own few processes");
  assert.equal(r.sharedRead, "ok: shared cache", "an agent.sandbox_binds path is visible");
  assert.match(r.sharedWrite!, /^failed: EROFS/, "and read-only with mode ro");
  assert.equal(r.allowed, "ok: hello from the allowed port", "a loopback port the config names for the agent is carried in");
  assert.equal(r.cwd, "ok: written", "the agent writes its own cwd");
  assert.equal(r.home, "ok: written", "the agent writes its own HOME");
  assert.equal(existsSync(join(l.w.dir, "escaped.txt")), false, "nothing was written outside the cwd");
  assert.equal(
    existsSync(join(l.w.dir, "work", channelDirName({ id: l.w.channel, name: "build-room" }), "escape-agent.txt")),
    true,
    "the cwd written inside is the channel's real one",
  );
  assert.equal(
    existsSync(join(l.stateDir, "homes", channelDirName({ id: l.w.channel, name: "build-room" }), "escape-agent.txt")),
    true,
    "HOME is the channel's, under the state directory",
  );
}

test("a sandboxed agent cannot read the key, queue.db, the daemon's /proc, another session's socket or channel, nor write outside its cwd", async () => {
  const l = await layout();
  try {
    // The other channel also shows that a channel can take the network away (stricter only).
    const d = await startDaemon(
      l,
      { sandbox: "bubblewrap", sandbox_binds: [{ path: join(l.w.dir, "work", "shared"), mode: "ro" }] },
      { channels: [{ id: "*" }, { id: l.otherChannel, agent: { network: "off" } }] },
    );
    await d.waitLog((x) => x.evt === "agent.sandbox" && x.state === "bubblewrap");
    const r = await tryEscape(l, d);
    assertContained(l, r, d);
    assert.equal(
      d.logs.filter((x) => x.evt === "agent.sandbox" && x.state === "host-network").length,
      0,
      "slirp4netns gave every sandbox a network of its own (as root it can here)",
    );
    assert.deepEqual(r.otherIfaces, ["lo"], "the channel with agent.network: off has no network but loopback");
    assert.deepEqual(
      [...r.ifaces].sort(),
      ["lo", "tap0"],
      "agent.network on (the default): a network of its own, connected outwards by slirp4netns",
    );
    const sandboxLine = d.logs.find((x) => x.evt === "agent.sandbox" && x.state === "bubblewrap")!;
    assert.equal(sandboxLine.network, "private");
    assert.deepEqual(sandboxLine.loopback_ports, [l.allowedPort]);
  } finally {
    await l.close();
  }
});

test("with agent.sandbox: off the same agent reads the key, queue.db, the daemon's environment, the other channel, and writes outside (the test can fail)", async () => {
  const l = await layout();
  try {
    // Unsandboxed, HOME is whatever agent.env says (here a scratch one, not the tester's).
    mkdirSync(join(l.w.dir, "home"));
    const d = await startDaemon(l, { sandbox: "off", env: { HOME: join(l.w.dir, "home") } });
    const { at: r } = await tryEscape(l, d);
    for (const name of [...ESCAPES, ...LOOPBACK_ESCAPES])
      assert.match(r[name]!, /^ok: /, `${name}: expected the unsandboxed agent to get through: ${r[name]}`);
    assert.match(r.key!, /ok: nsec1/, "the key file's text");
    assert.match(r.queue!, /ok: SQLite format/, "queue.db's header");
    assert.equal(existsSync(join(l.w.dir, "escaped.txt")), true);
  } finally {
    await l.close();
  }
});

test("the sandbox holds the same when the daemon runs as an unprivileged user (as systemd and Docker run it)", async (t) => {
  if (process.getuid?.() !== 0) {
    if (process.env.CI) assert.fail("this test runs the daemon as nobody and must run as root (CI runs as root)");
    t.skip("not root: cannot run the daemon as another user here (CI runs it)");
    return;
  }
  const readable = spawnSync(process.execPath, ["-e", `require("node:fs").accessSync(${JSON.stringify(join(REPO, "dist", "cli.js"))})`], {
    uid: NOBODY,
    gid: NOBODY,
  });
  assert.equal(readable.status, 0, `the checkout ${REPO} must be readable by uid ${NOBODY} (nobody) for this test: ${readable.stderr}`);
  const l = await layout();
  try {
    const d = await startDaemon(
      l,
      { sandbox: "bubblewrap", sandbox_binds: [{ path: join(l.w.dir, "work", "shared"), mode: "ro" }] },
      { uid: NOBODY },
    );
    // As an unprivileged user, some kernels (gVisor) refuse slirp4netns the sandbox's network
    // namespace: the daemon then says so, and the filesystem sandbox holds all the same.
    assertContained(l, await tryEscape(l, d), d);
  } finally {
    await l.close();
  }
});

test("agent.sandbox: bubblewrap where bubblewrap is missing: the daemon does not start, and says what to install", async () => {
  const w = await World.create();
  try {
    const d = await w.startDaemon({ agent: { sandbox: "bubblewrap" } }, { env: { PATH: "/nonexistent" }, waitStarted: false });
    const code = await d.exited;
    assert.notEqual(code, 0, "start-up fails");
    const failed = d.logs.find((x) => x.evt === "daemon.start_failed");
    assert.ok(failed, `a daemon.start_failed line; got:\n${d.raw().slice(-2000)}`);
    assert.match(String(failed.err), /agent\.sandbox is bubblewrap but bubblewrap \(bwrap\) is not installed/);
    assert.match(String(failed.err), /apt-get install bubblewrap/, "it names the package to install");
    assert.match(String(failed.err), /user namespaces/, "and what to enable");
  } finally {
    await w.close();
  }
});

test("agent.sandbox: auto where bubblewrap is missing: one warning, and mentions are still answered (unsandboxed)", async () => {
  const w = await World.create();
  try {
    const d = await w.startDaemon({ agent: { sandbox: "auto" } }, { env: { PATH: "/nonexistent" } });
    for (const text of ["@agent first", "@agent second"]) {
      const ev = await w.owner.post(text);
      await w.waitReply(ev, 30_000);
    }
    const warnings = d.logs.filter((x) => x.evt === "agent.sandbox");
    assert.equal(warnings.length, 1, `one agent.sandbox line: ${JSON.stringify(warnings)}`);
    assert.equal(warnings[0]!.state, "unavailable");
    assert.equal(warnings[0]!.level, "warn");
    assert.match(String(warnings[0]!.reason), /not installed/);
  } finally {
    await w.close();
  }
});

test("config: a sandbox_binds path that does not exist, and a channel that loosens the sandbox or the network, are errors naming them", () => {
  const base = `identity:\n  secret_key: "${"1".repeat(64)}"\nrelay:\n  url: ws://127.0.0.1:1\n`;
  const missing = "/nonexistent/shared-cache";
  assert.throws(
    () => loadConfigText(`${base}agent:\n  sandbox_binds:\n    - { path: ${missing}, mode: ro }\n`, "/etc/bb.yaml"),
    (err: Error) =>
      err instanceof ConfigError &&
      /bb\.yaml:\d+:\d+: agent\.sandbox_binds\[0\]\.path: \/nonexistent\/shared-cache does not exist/.test(err.message),
  );
  assert.throws(
    () =>
      loadConfigText(
        `${base}agent:\n  sandbox: auto\n  network: off\nchannels:\n  - id: "*"\n    agent: { sandbox: "off", network: "on" }\n`,
        "/etc/bb.yaml",
      ),
    (err: Error) =>
      err instanceof ConfigError &&
      /channels\[0\]\.agent\.sandbox: a channel may only make the sandbox stricter than agent\.sandbox \(auto\)/.test(err.message) &&
      /channels\[0\]\.agent\.network: a channel may only make the network stricter than agent\.network \(off\)/.test(err.message),
  );
  const ok = loadConfigText(
    `${base}agent:\n  sandbox: "off"\n  sandbox_binds:\n    - { path: /usr }\nchannels:\n  - id: "*"\n    agent: { sandbox: bubblewrap, network: "off" }\n`,
    "/etc/bb.yaml",
  );
  assert.deepEqual(ok.config.agent.sandbox_binds, [{ path: "/usr", mode: "ro" }], "mode defaults to ro");
  assert.deepEqual(ok.config.channels[0]!.agent, { sandbox: "bubblewrap", network: "off" }, "stricter overrides are accepted");
});

test("hiding: a named file alone in its directory hides the directory; one beside other files is unreadable while they stay readable; an agent installed in a hidden place is refused by name", () => {
  const root = mkdtempSync(join("/var/tmp", "bb-hide-"));
  try {
    for (const d of ["conf", "keys", "state", "cwd"]) mkdirSync(join(root, d));
    writeFileSync(join(root, "conf", "bridge.yaml"), "identity: secret\n");
    writeFileSync(join(root, "conf", "team-notes.txt"), "notes for everyone\n");
    writeFileSync(join(root, "keys", "agent.nsec"), "nsec1secret\n", { mode: 0o600 });
    // network: off, so the launch is plain bubblewrap (a private network needs sandbox-net.ts to start it).
    const sandbox = new AgentSandbox({
      mode: "bubblewrap",
      network: "off",
      binds: [],
      stateDir: join(root, "state"),
      hide: [join(root, "conf", "bridge.yaml"), join(root, "keys", "agent.nsec"), join(root, "state")],
    });
    const launch = sandbox.launch({ channel: { id: "x", name: "x" }, cwd: join(root, "cwd"), env: {} })!;
    const script = `cd ${root}; cat conf/bridge.yaml 2>&1 | sed 's/.*: //'; cat conf/team-notes.txt; echo "keys: $(ls -A keys | wc -l)"; echo "state: $(ls -A state | wc -l)"`;
    const r = spawnSync(launch.command, [...launch.args, "sh", "-c", script], {
      encoding: "utf8",
      env: { PATH: process.env.PATH, ...launch.env },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split("\n"), [
      "Permission denied",
      "notes for everyone",
      "keys: 0",
      `state: ${existsSync(join(root, "state", "homes")) ? 1 : 0}`,
    ]);

    // An agent installed where the sandbox hides it would vanish at start: the error says where and what to do.
    mkdirSync(join(root, "state", "bin"));
    writeFileSync(join(root, "state", "bin", "my-agent"), "#!/bin/sh\n", { mode: 0o755 });
    assert.throws(
      () =>
        sandbox.launch({
          channel: { id: "x", name: "x" },
          cwd: join(root, "cwd"),
          env: { PATH: `/usr/bin:${join(root, "state", "bin")}` },
          command: "my-agent",
        }),
      /the agent command \S+\/state\/bin\/my-agent is inside \S+\/state, which the sandbox hides from agents: install it elsewhere .* or add its directory to agent\.sandbox_binds/,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

/**
 * Until the pool has a warm spare. A spare whose start failed (as one did in a fresh-clone run
 * on two loaded cores) is started again by the pool after a pause: `spareReady` answers for the
 * attempt under way, so this asks again until one is up.
 */
function spareUp(pool: AgentPool): Promise<unknown> {
  return waitFor(() => pool.spareReady(), { what: "the warm spare to be ready" });
}

test("the warm spare is sandboxed for the channel that last opened a session: a new thread there takes it, another channel moves it", async () => {
  const root = mkdtempSync(join("/var/tmp", "bb-spare-"));
  const state = join(root, "state");
  mkdirSync(state);
  // install: the demo agent runs from this checkout, which may live under /tmp (as the daemon passes it).
  const sandbox = new AgentSandbox({
    mode: "bubblewrap",
    network: "on",
    binds: [],
    hide: [state, join(root, "work")],
    stateDir: state,
    install: REPO,
  });
  const pool = new AgentPool(demoPoolOptions(root, { warmSpare: true, sandbox, linkRoot: join(state, "link") }));
  const acquire = (scope: string, name: string) => pool.acquire(scope, { channel: { id: name, name }, mcpEnv: {} });
  try {
    pool.start();
    assert.equal(await pool.spareReady(), false, "no channel known yet: no spare (it would be bound to a channel)");
    pool.warmFor({ id: "alpha", name: "alpha" });
    await spareUp(pool);
    const alphaSpare = pool.sparePid!;
    const a1 = await acquire("alpha/t1", "alpha");
    assert.equal(a1.proc.pid, alphaSpare, "a thread in the spare's channel takes it");
    await spareUp(pool);
    const next = pool.sparePid!;
    const b1 = await acquire("beta/t1", "beta");
    assert.notEqual(b1.proc.pid, next, "another channel's session does not get alpha's sandbox");
    await spareUp(pool);
    const betaSpare = pool.sparePid!;
    assert.notEqual(betaSpare, next, "the spare moved to beta");
    const b2 = await acquire("beta/t2", "beta");
    assert.equal(b2.proc.pid, betaSpare, "the next thread in beta takes the moved spare");
  } finally {
    await pool.close();
    rmSync(root, { recursive: true, force: true });
  }
});

/** A pool whose bubblewrap fails its first `fails` sandboxes with its loopback error (test/fixtures/flaky-bwrap.sh). */
function flakyBwrapPool(fails: number) {
  const root = mkdtempSync(join("/var/tmp", "bb-flaky-bwrap-"));
  const state = join(root, "state");
  mkdirSync(state);
  const mark = join(root, "failures");
  const { logger, lines } = captureLogger("info");
  const sandbox = new AgentSandbox({
    mode: "bubblewrap",
    // Without a network: bubblewrap sets up the loopback itself (with one, a failure there
    // falls back to the host's network instead, agent.sandbox's documented fallback).
    network: "off",
    binds: [],
    hide: [state, join(root, "work")],
    stateDir: state,
    install: REPO,
    bwrap: join(REPO, "test", "fixtures", "flaky-bwrap.sh"),
  });
  // The agent's environment is what bubblewrap is started with.
  const env = { FLAKY_BWRAP_MARK: mark, FLAKY_BWRAP_FAILS: String(fails) };
  const pool = new AgentPool(demoPoolOptions(root, { sandbox, linkRoot: join(state, "link"), logger, env }));
  pool.start();
  return {
    pool,
    lines,
    shown: () => (existsSync(mark) ? readFileSync(mark, "utf8").split("\n").filter(Boolean).length : 0),
    close: async () => {
      await pool.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

test("a sandbox that fails to set up three times in a row (bubblewrap's loopback error in a burst under load) is tried again: the session opens, each failure at warn, none counted by the breaker", async () => {
  const f = flakyBwrapPool(3);
  try {
    const s = await f.pool.acquire("alpha/t1", { channel: { id: "alpha", name: "alpha" }, mcpEnv: {} });
    assert.ok(s.alive, "the session opened on the fourth try");
    assert.equal(f.shown(), 3, "three sandboxes did fail");
    const failed = f.lines.filter((l) => l.evt === "agent.start_failed");
    assert.deepEqual(
      failed.map((l) => [l.level, l.attempt]),
      [
        ["warn", 1],
        ["warn", 2],
        ["warn", 3],
      ],
      "each failure logged once, at warn, with its try",
    );
    assert.match(String(failed[0]!.stderr), /bwrap: loopback: Failed RTM_NEWADDR/);
    assert.ok(
      failed.every((l) => Number(l.retry_ms) >= 200 && Number(l.retry_ms) <= 2400),
      `the pauses: ${failed.map((l) => l.retry_ms)}`,
    );
    assert.deepEqual(f.pool.circuit, { state: "closed", until: undefined, crashes: 0 }, "nothing counted against the agent");
  } finally {
    await f.close();
  }
});

test("a sandbox that never sets up: the start fails after five tries, at error once, and counts once towards the breaker", async () => {
  const f = flakyBwrapPool(1000);
  try {
    await assert.rejects(
      f.pool.acquire("alpha/t1", { channel: { id: "alpha", name: "alpha" }, mcpEnv: {} }),
      (e: unknown) => e instanceof AgentStartError && /bwrap: loopback: Failed RTM_NEWADDR/.test(e.stderrTail),
    );
    assert.equal(f.shown(), 5, "five tries");
    const failed = f.lines.filter((l) => l.evt === "agent.start_failed");
    assert.deepEqual(
      failed.map((l) => l.level),
      ["warn", "warn", "warn", "warn", "error"],
      "four tried again at warn, the last at error",
    );
    assert.equal(f.pool.circuit.crashes, 1, "one failure to start");
  } finally {
    await f.close();
  }
});
