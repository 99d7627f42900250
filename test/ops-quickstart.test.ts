/**
 * The README's quick start, run as written: its numbered steps are read from README.md and
 * each step's shell block is run with bash, in order, in a home directory of its own, so
 * the steps cannot drift from what works. A command that keeps running (the dev relay, the
 * daemon, `tail`) is started in the background, as its own terminal would hold it, and
 * awaited until it says it is ready. Step 1 (`npm ci && npm run build && npm link`) is what
 * the suite's own build already did: a `buzz-bridge` on PATH that runs this checkout's
 * dist/cli.js stands for `npm link`. One deviation: the relay's port 7777 becomes a free
 * port (other tests run beside this one).
 *
 * Done when the owner's mention, posted as step 6 says, gets exactly one reply in its
 * thread, which `tail` shows with the seed's names.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nip19 } from "nostr-tools";
import { createLogger } from "../src/base/log.js";
import { RelayClient } from "../src/relay/index.js";
import { KIND } from "../src/nostr/kinds.js";
import { CLI, REPO } from "../kit/world.js";
import { waitFor } from "../kit/wait.js";
import { freePort } from "../kit/net.js";

interface Step {
  n: number;
  text: string;
  script: string;
}

/** The quick start's numbered steps, each with its ```sh block (the list's indentation removed). */
function quickStart(): Step[] {
  const readme = readFileSync(join(REPO, "README.md"), "utf8");
  const start = readme.indexOf("## Quick start");
  assert.ok(start >= 0, "README.md has a Quick start section");
  const section = readme.slice(start, readme.indexOf("\n## ", start + 3));
  return section
    .split(/^(?=\d+\. )/m)
    .slice(1)
    .map((part) => {
      const n = Number(/^(\d+)\./.exec(part)![1]);
      const block = /^( *)```sh\n([\s\S]*?)\n\1```/m.exec(part);
      assert.ok(block, `step ${n} has a sh block`);
      const indent = block[1]!.length;
      const script = block[2]!
        .split("\n")
        .map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length)))
        .join("\n");
      return { n, text: part.slice(0, block.index).trim(), script };
    });
}

const home = mkdtempSync(join(tmpdir(), "bb-quickstart-"));
const bin = join(home, "bin");
const dir = join(home, "buzz-bridge-try");
const children: ChildProcess[] = [];
let port = 0;
let steps: Step[] = [];

/** The environment of a person's terminal: this HOME, `buzz-bridge` on PATH, nothing of the suite's own. */
function env(): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, HOME: home, PATH: `${bin}:${process.env.PATH}` };
  for (const k of ["BUZZ_BRIDGE_CONFIG", "BUZZ_PRIVATE_KEY", "STATE_DIRECTORY", "CREDENTIALS_DIRECTORY"]) delete e[k];
  return e;
}

const localPort = (s: string) => s.replaceAll("7777", String(port));

/** A command that keeps running, as the README has it: the last line of its step. */
const LONG_RUNNING = /(^|&& )buzz-bridge (dev-relay|run|tail)\b/;

/** Runs a step's block to its end, as a terminal would; returns what it printed. */
function runSync(step: Step, script: string): string {
  const r = spawnSync("bash", ["-e", "-c", localPort(script)], { cwd: REPO, env: env(), encoding: "utf8", timeout: 120_000 });
  assert.equal(r.status, 0, `step ${step.n} failed:\n${script}\n--- stdout ---\n${r.stdout}\n--- stderr ---\n${r.stderr}`);
  return r.stdout;
}

/**
 * Runs a step whose last command keeps running, as its terminal would: the whole block in
 * one shell (its `cd` holds for the last line), in the background in its own process group,
 * collecting what it prints.
 */
function runInBackground(step: Step): { proc: ChildProcess; out: () => string } {
  const lines = step.script.split("\n");
  assert.match(lines[lines.length - 1]!, LONG_RUNNING, `step ${step.n} ends with a command that keeps running`);
  const proc = spawn("bash", ["-e", "-c", localPort(step.script)], {
    cwd: REPO,
    env: env(),
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  children.push(proc);
  let out = "";
  proc.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  proc.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  return { proc, out: () => out };
}

before(async () => {
  port = await freePort();
  mkdirSync(bin);
  // What `npm link` gives: `buzz-bridge` on PATH, running this checkout.
  writeFileSync(join(bin, "buzz-bridge"), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
  chmodSync(join(bin, "buzz-bridge"), 0o755);
  steps = quickStart();
});

after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) process.kill(-c.pid!, "SIGKILL");
  rmSync(home, { recursive: true, force: true });
});

test("the quick start is numbered steps 1 to 6, each with one shell block, step 1 the build", () => {
  assert.deepEqual(
    steps.map((s) => s.n),
    [1, 2, 3, 4, 5, 6],
  );
  assert.equal(steps[0]!.script, "npm ci && npm run build && npm link", "what this test stands in for with a PATH entry");
  assert.match(steps[3]!.script, /command: buzz-bridge\n\s+args: \[demo-agent\]/, "no API key: the demo agent");
  assert.match(steps[2]!.script, /--data relay-data/, "the relay keeps its state across restarts");
});

test("steps 2 to 6, as written, reach a reply in the owner's thread, shown by tail with the seed's names", async () => {
  // 2: the keys.
  runSync(steps[1]!, steps[1]!.script);
  for (const f of ["agent.nsec", "me.nsec", "agent.txt", "me.txt"]) assert.ok(existsSync(join(dir, f)), `${f} in ~/buzz-bridge-try`);
  const npubOf = (f: string) => /^npub: (npub1\w+)$/m.exec(readFileSync(join(dir, f), "utf8"))![1]!;

  // 3: the seed and the relay, which keeps running.
  const relay = runInBackground(steps[2]!);
  const url = await waitFor(() => /^(ws:\/\/\S+)$/m.exec(relay.out())?.[1], {
    timeoutMs: 30_000,
    intervalMs: 100,
    what: () => `the relay's URL; it printed:\n${relay.out()}`,
  });
  assert.equal(url, `ws://127.0.0.1:${port}`);
  // The seed's lines follow the URL; a loaded machine may not have printed them yet.
  await waitFor(() => /^channel 6f1c2a4e-0000-4000-8000-00000000a11c general$/m.test(relay.out()), {
    timeoutMs: 30_000,
    intervalMs: 100,
    what: () => `the seed's channel, with its fixed id; the relay printed:\n${relay.out()}`,
  });

  // 4: the config, check, doctor.
  const doctorOut = runSync(steps[3]!, steps[3]!.script);
  assert.match(doctorOut, new RegExp(`# ${join(dir, "buzz-bridge.yaml")}: valid`));
  assert.match(doctorOut, new RegExp(`owner: ${npubOf("me.txt")}`), "the owner is the npub step 2 printed");
  const marks = doctorOut.split("\n").filter((l) => /^[✓✗–] /.test(l));
  assert.ok(marks.length >= 7, doctorOut);
  assert.deepEqual(
    marks.filter((l) => !l.startsWith("✓")),
    [],
    `every doctor line ✓:\n${doctorOut}`,
  );

  // 5: the daemon, which keeps running.
  const daemon = runInBackground(steps[4]!);
  await waitFor(
    () => {
      assert.equal(daemon.proc.exitCode, null, daemon.out().slice(-3000));
      return daemon.out().includes('"evt":"daemon.started"');
    },
    { timeoutMs: 90_000, intervalMs: 100, what: () => `daemon.started:\n${daemon.out().slice(-3000)}` },
  );

  // 6: the post, then tail, which keeps running.
  const tail = runInBackground(steps[5]!);
  const eventId = await waitFor(() => /^([0-9a-f]{64})$/m.exec(tail.out())?.[1], {
    timeoutMs: 30_000,
    intervalMs: 100,
    what: () => `post to print the event id:\n${tail.out()}`,
  });

  // What the owner sees in the channel: one reply, in the mention's thread.
  const me = new RelayClient({
    url,
    secretKey: nip19.decode(readFileSync(join(dir, "me.nsec"), "utf8").trim()).data as Uint8Array,
    logger: createLogger({ level: "silent" }),
  });
  await me.start();
  try {
    const agentPk = nip19.decode(npubOf("agent.txt")).data as string;
    // The turn has ended when ✅ is on the mention: only then is "exactly one" final.
    await waitFor(
      async () =>
        (await me.query([{ kinds: [KIND.reaction], authors: [agentPk], "#e": [eventId] }]).catch(() => [])).some((r) => r.content === "✅"),
      { timeoutMs: 150_000, intervalMs: 200, what: () => `✅ on the mention; daemon output:\n${daemon.out().slice(-3000)}` },
    );
    const replies = await me.query([{ kinds: [KIND.message], authors: [agentPk], "#e": [eventId] }]);
    assert.equal(replies.length, 1, "exactly one reply, in the mention's thread");
  } finally {
    me.stop();
  }
  await waitFor(() => /#general {2}me: @agent hello {2}→ @agent$/m.test(tail.out()), {
    timeoutMs: 30_000,
    intervalMs: 100,
    what: () => `tail shows the mention by name:\n${tail.out()}`,
  });
  await waitFor(() => /#general ↳ me's thread {2}agent: Demo agent here/.test(tail.out()), {
    timeoutMs: 30_000,
    intervalMs: 100,
    what: () => `tail shows the reply by name:\n${tail.out()}`,
  });
  assert.ok(existsSync(join(dir, "buzz-bridge-state", "queue.db")), "state beside the config, as step 5 says");

  // Ctrl-C in each terminal.
  for (const [p, name] of [
    [tail.proc, "tail"],
    [daemon.proc, "run"],
    [relay.proc, "dev-relay"],
  ] as const) {
    const exited = new Promise<number | null>((r) => p.once("exit", (code) => r(code)));
    process.kill(-p.pid!, "SIGINT");
    assert.equal(await exited, 0, `${name} exits 0 on Ctrl-C`);
  }
});
