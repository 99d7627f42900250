/**
 * `buzz-bridge run` applies its V8 memory settings (src/app/http/v8-memory.ts): the young
 * generation stays at its starting size, so the idle daemon does not hold the 32 MiB V8
 * would otherwise keep after start-up (bench figure 7), unless whoever started node chose
 * the setting themselves. And its glibc setting (src/app/http/malloc-tuning.ts): the
 * process runs with a fixed mmap threshold, and puts its environment back as given for
 * what it starts. Real parts: dev relay, `buzz-bridge run` subprocess (demo
 * agent as its warm spare), its own `/metrics`, the processes' environments in /proc.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { daemonV8Flags } from "../src/app/http/v8-memory.js";
import { DAEMON_MALLOC_TUNABLE, GIVEN_TUNABLES_ENV, mallocReexecEnv, restoreGivenTunables } from "../src/app/http/malloc-tuning.js";
import { World } from "../kit/world.js";
import { freePort } from "../kit/net.js";
import { waitFor } from "../kit/wait.js";

let w: World;
before(async () => {
  w = await World.create({ channelName: "memory-room" });
});
after(() => w.close());

/** The young generation's committed size in bytes, from the daemon's own `/metrics`. */
async function newSpaceBytes(metricsUrl: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const m = /^nodejs_heap_space_size_total_bytes\{space="new"\} (\S+)$/m.exec(text);
  assert.ok(m, "/metrics reports the new space");
  return Number(m[1]);
}

test("after start-up and a turn the daemon's young generation has not grown past two 1 MiB semi-spaces", async () => {
  const port = await freePort();
  const d = await w.startDaemon({ http: { listen: `127.0.0.1:${port}` }, log: { level: "info" } });
  try {
    // Start-up (modules, channel discovery, the warm agent) is done; a mention exercises the turn path too.
    const asked = await w.owner.post("@agent what is this room for?");
    await w.waitReply(asked);
    // Two 1 MiB semi-spaces at most (V8 may shrink them further when idle); V8's default grows them to 32 MiB here.
    const bytes = await newSpaceBytes(`http://127.0.0.1:${port}/metrics`);
    assert.ok(bytes <= 2 * 1048576, `young generation ${bytes} bytes, expected at most 2 MiB`);
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test("a setting given to node (flag or NODE_OPTIONS) is left as given; the others still apply", () => {
  const both = ["--semi-space-growth-factor=1", "--heap-growing-percent=20"];
  assert.deepEqual(daemonV8Flags([], undefined), both);
  assert.deepEqual(daemonV8Flags(["--expose-gc", "--import", "x.js", "--max-old-space-size=512"], "--enable-source-maps"), both);
  assert.deepEqual(daemonV8Flags(["--max-semi-space-size=16"], undefined), ["--heap-growing-percent=20"]);
  assert.deepEqual(daemonV8Flags(["--max_semi_space_size=8"], undefined), ["--heap-growing-percent=20"]);
  assert.deepEqual(daemonV8Flags([], "--enable-source-maps --min-semi-space-size=4"), ["--heap-growing-percent=20"]);
  assert.deepEqual(daemonV8Flags([], "--semi-space-growth-factor=2"), ["--heap-growing-percent=20"]);
  assert.deepEqual(daemonV8Flags(["--heap-growing-percent=50"], undefined), ["--semi-space-growth-factor=1"]);
  assert.deepEqual(daemonV8Flags(["--max-semi-space-size=16", "--heap-growing-percent=0"], undefined), []);
});

/** A process's environment as it was started (execve), from /proc. */
function environOf(pid: number): Map<string, string> {
  const pairs = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").filter(Boolean);
  return new Map(pairs.map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)]));
}

/** The pids whose parent is `pid`, with their command lines. */
function childrenOf(pid: number): Array<{ pid: number; cmd: string }> {
  const out: Array<{ pid: number; cmd: string }> = [];
  for (const name of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) !== pid) continue;
      out.push({ pid: Number(name), cmd: readFileSync(`/proc/${name}/cmdline`, "utf8").replaceAll("\0", " ") });
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

const canReexec = process.platform === "linux" && typeof (process as { execve?: unknown }).execve === "function";

test("the daemon runs with glibc's mmap threshold fixed, in the same process; its warm agent gets neither the setting nor its marker", {
  skip: canReexec ? false : "needs Linux and a node with process.execve (22.15 or later)",
}, async () => {
  const given = "glibc.pthread.rseq=1";
  const d = await w.startDaemon({}, { env: { GLIBC_TUNABLES: given } });
  try {
    // The pid the test spawned now runs the re-executed image, started with the setting and the
    // marker of what it was given. (glibc splits GLIBC_TUNABLES at its colons in place, so the
    // raw text is read rather than one variable.)
    const raw = readFileSync(`/proc/${d.proc.pid}/environ`, "utf8");
    assert.ok(raw.includes(DAEMON_MALLOC_TUNABLE), `the daemon's environment has ${DAEMON_MALLOC_TUNABLE}`);
    assert.equal(environOf(d.proc.pid!).get(GIVEN_TUNABLES_ENV), given);
    const agent = await waitFor(() => childrenOf(d.proc.pid!).find((c) => c.cmd.includes("demo-agent")), {
      what: "the daemon's warm demo agent",
    });
    // An agent's environment is an allow-list (agent/env.ts): neither the setting nor the marker reach it.
    const env = readFileSync(`/proc/${agent.pid}/environ`, "utf8");
    assert.ok(!env.includes(DAEMON_MALLOC_TUNABLE), "the agent's environment has no daemon malloc setting");
    assert.ok(!env.includes(GIVEN_TUNABLES_ENV), "the agent's environment has no marker");
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test("glibc's setting: added to GLIBC_TUNABLES on Linux unless a malloc tunable is given; the given value is restored after", () => {
  assert.deepEqual(mallocReexecEnv({ HOME: "/h" }, "linux"), {
    HOME: "/h",
    GLIBC_TUNABLES: DAEMON_MALLOC_TUNABLE,
    [GIVEN_TUNABLES_ENV]: "",
  });
  assert.deepEqual(mallocReexecEnv({ GLIBC_TUNABLES: "glibc.pthread.rseq=0" }, "linux"), {
    GLIBC_TUNABLES: `glibc.pthread.rseq=0:${DAEMON_MALLOC_TUNABLE}`,
    [GIVEN_TUNABLES_ENV]: "glibc.pthread.rseq=0",
  });
  // The user's own allocator choice, the re-executed process itself, and other systems are left alone.
  assert.equal(mallocReexecEnv({ GLIBC_TUNABLES: "glibc.malloc.arena_max=2" }, "linux"), undefined);
  assert.equal(mallocReexecEnv({ GLIBC_TUNABLES: "glibc.pthread.rseq=0:glibc.malloc.trim_threshold=0" }, "linux"), undefined);
  assert.equal(mallocReexecEnv({ [GIVEN_TUNABLES_ENV]: "" }, "linux"), undefined);
  assert.equal(mallocReexecEnv({}, "darwin"), undefined);

  const unset: Record<string, string | undefined> = { GLIBC_TUNABLES: DAEMON_MALLOC_TUNABLE, [GIVEN_TUNABLES_ENV]: "", HOME: "/h" };
  restoreGivenTunables(unset);
  assert.deepEqual(unset, { HOME: "/h" });
  const set: Record<string, string | undefined> = { GLIBC_TUNABLES: `a=1:${DAEMON_MALLOC_TUNABLE}`, [GIVEN_TUNABLES_ENV]: "a=1" };
  restoreGivenTunables(set);
  assert.deepEqual(set, { GLIBC_TUNABLES: "a=1" });
});
