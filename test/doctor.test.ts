/**
 * `buzz-bridge doctor` as a person runs it: `node dist/cli.js doctor -c FILE` against a
 * real dev relay (World), the demo agent and real MCP fixture servers. Each ✗ must carry
 * the reason a person can act on; exit 1 on any ✗, 0 when all pass. Independent faults
 * share one run (doctor reports every check, not just the first failure), and runs go
 * two at a time, to keep the file fast on a busy machine.
 */
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { generateSecretKey, getPublicKey, nip19 } from "nostr-tools";
import { CLI, REPO, World } from "../kit/world.js";

const GATE_SERVER = join(REPO, "test", "fixtures", "gate-server.mjs");
const BAD_SERVER = join(REPO, "test", "fixtures", "bad-server.mjs");
const BAD_AGENT = join(REPO, "test", "fixtures", "agent-bad.mjs");

let w: World;

before(async () => {
  w = await World.create({ channelName: "build-room", about: "Where the build team coordinates releases" });
});
after(() => w.close());

interface Run {
  code: number | null;
  out: string;
}

/** Runs doctor on a config written from the World's base plus overrides. */
function doctor(overrides: Record<string, unknown>, name: string, extraArgs: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return doctorFile(w.writeConfig(overrides, `${name}.yaml`), extraArgs, env);
}

function doctorFile(file: string, extraArgs: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [CLI, "doctor", "-c", file, "--timeout", "30s", ...extraArgs], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...env },
    });
    let out = "";
    proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
    proc.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const kill = setTimeout(() => proc.kill("SIGKILL"), 60_000);
    proc.on("error", reject);
    proc.on("exit", (code) => {
      clearTimeout(kill);
      resolve({ code, out });
    });
  });
}

/** The table line of one check (`✓ name  summary`), failing with the whole output when absent. */
function line(r: Run, name: string): string {
  const l = r.out.split("\n").find((x) => new RegExp(`^[✓✗–] ${name.replace(/ /g, "\\s")}\\s`).test(x));
  assert.ok(l, `no '${name}' line in:\n${r.out}`);
  return l;
}

/** Asserts one check's line matches, showing the whole table when it does not. */
function expectLine(r: Run, name: string, re: RegExp): void {
  assert.match(line(r, name), re, `'${name}' line does not match ${re}:\n${r.out}`);
}

function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const gatesServer = { command: process.execPath, args: [GATE_SERVER], env: { GATE_TOOLS: "lint" } };

describe("doctor", { concurrency: 2 }, () => {
  test("✓ for every check against the dev relay with the demo agent and a fixture MCP server; exit 0", async () => {
    // A state directory of its own: the tests beside it check theirs at the same time, and the
    // sandbox can only cover one that exists when it is set up.
    const r = await doctor({ state_dir: join(w.dir, "state-ok"), mcp: { servers: { gates: gatesServer } } }, "ok");
    assert.equal(r.code, 0, r.out);
    expectLine(r, "config", /^✓ .*valid/);
    expectLine(r, "relay", /^✓ .*reachable/);
    expectLine(r, "auth", /^✓ .*NIP-42 auth accepted/);
    expectLine(r, "channels", /^✓ .*1 channel/);
    assert.match(r.out, /#build-room .*Where the build team coordinates releases/, "channel name and description shown");
    expectLine(r, "agent", /^✓ .*answered ACP initialize as buzz-bridge-demo-agent/);
    assert.match(r.out, /modes: default, bypassPermissions/, "the modes the agent offers are listed");
    assert.match(r.out, /models: demo-small, demo-large/, "the models the agent offers are listed, for agent.model");
    assert.match(r.out, /effort levels: low, medium, high/, "the effort levels the agent offers are listed, for agent.effort");
    expectLine(r, "mcp gates", /^✓ .*listed \d+ tools/);
    assert.match(r.out, /lint/, "the server's tools are listed");
    expectLine(r, "tool names", /^✓ .*no collisions/);
    // bubblewrap is installed where the suite runs (.ci/run installs it): the sandbox runs once.
    expectLine(r, "sandbox", /^✓ .*bubblewrap .*: agents run sandboxed; network on/);
    // The test world binds its own directory in (kit/world.ts), so what lies in it is
    // covered rather than absent: an unreadable placeholder, an empty directory; the state
    // directory and the work area do not exist yet (doctor creates neither, starts no session).
    assert.match(
      r.out,
      /cannot reach: config file \S+ok\.yaml \(unreadable\), state directory \S+ \((?:empty|hidden)\), channels' working directories \S+ \(hidden\)/,
    );
    assert.match(r.out, /processes: sees \d+ \(its own pid namespace\), not the daemon's/);
    assert.match(r.out, /all checks passed/);
    assert.doesNotMatch(r.out, /nsec1/, "no secret in the output");
  });

  test("bubblewrap failing to set a sandbox up three times in a row (its loopback error in a burst under load): doctor tries again, as the daemon does, and reports the sandbox ✓", async () => {
    const dir = join(w.dir, "flaky-bwrap");
    mkdirSync(dir, { recursive: true });
    const mark = join(dir, "failures");
    const real = execFileSync("sh", ["-c", "command -v bwrap"], { encoding: "utf8" }).trim();
    // The first three sandboxes with a network of its own fail the way bubblewrap does under load
    // (test/fixtures/flaky-bwrap.sh, here named bwrap in PATH, running the real one by its path,
    // its settings written in: doctor starts bubblewrap with the agent's environment only).
    const flaky = readFileSync(join(REPO, "test", "fixtures", "flaky-bwrap.sh"), "utf8")
      .replace(/^exec bwrap /m, `exec ${real} `)
      .replace(/^for a in/m, `FLAKY_BWRAP_MARK=${mark}\nFLAKY_BWRAP_FAILS=3\nfor a in`);
    writeFileSync(join(dir, "bwrap"), flaky, { mode: 0o755 });
    const r = await doctor({ state_dir: join(w.dir, "state-flaky") }, "flaky-bwrap", [], { PATH: `${dir}:${process.env.PATH}` });
    assert.equal(readFileSync(mark, "utf8").split("\n").filter(Boolean).length, 3, "three sandboxes did fail");
    expectLine(r, "sandbox", /^✓ .*bubblewrap .*: agents run sandboxed; network on/);
  });

  test("wrong relay URL, missing agent command, broken MCP server, bad tool names: each ✗ with its reason; exit 1", async () => {
    const port = await closedPort();
    const long = "x".repeat(60);
    const r = await doctor(
      {
        relay: { url: `ws://127.0.0.1:${port}` },
        agent: { command: "no-such-agent-xyz", args: [], sandbox: "bubblewrap" },
        mcp: {
          servers: {
            gates: { ...gatesServer, env: { GATE_TOOLS: long } },
            other: { command: process.execPath, args: [GATE_SERVER], prefix: false },
            third: { command: process.execPath, args: [GATE_SERVER], prefix: false },
            broken: { command: process.execPath, args: [BAD_SERVER], env: { BAD_MODE: "exit" } },
          },
        },
      },
      "many-faults",
      [],
      { PATH: "/nonexistent" }, // no bwrap there
    );
    assert.equal(r.code, 1, r.out);
    expectLine(r, "relay", new RegExp(`^✗ .*cannot connect to ws://127\\.0\\.0\\.1:${port}: ECONNREFUSED`));
    expectLine(r, "auth", /^– .*skipped/);
    expectLine(r, "channels", /^– .*skipped/);
    expectLine(r, "agent", /^✗ agent\s+agent command 'no-such-agent-xyz' not found on PATH/);
    expectLine(r, "mcp gates", /^✓/);
    expectLine(r, "mcp broken", /^✗ .*failed: exited before listing its tools/);
    assert.match(r.out, /bad-server: missing configuration FOO_TOKEN/, "the server's stderr tail");
    expectLine(r, "tool names", /^✗ .*problems with the proxy's tool names \(without broken, which did not start\)/);
    assert.match(r.out, new RegExp(`tool '${long}' of 'gates' breaks the naming rules .*limit 64`));
    assert.match(r.out, /tool name 'pid' is offered by both 'other' and 'third'/);
    expectLine(r, "sandbox", /^✗ .*agent\.sandbox is bubblewrap but bubblewrap \(bwrap\) is not installed/);
    assert.match(r.out, /to fix: install bubblewrap \(Debian\/Ubuntu: apt-get install bubblewrap\)/);
    assert.match(r.out, /5 checks failed/);
  });

  test("an MCP server the agent sandbox hides (its command under the state directory): ✗ as the first turn would fail, not ✓", async () => {
    // A wrapper script where the sandbox shows an empty directory: it starts outside, not inside.
    const bin = join(w.dir, "state", "bin");
    mkdirSync(bin, { recursive: true });
    const script = join(bin, "gate.sh");
    writeFileSync(script, `#!/bin/sh\nexec ${process.execPath} ${GATE_SERVER}\n`, { mode: 0o755 });
    const r = await doctor({ mcp: { servers: { visible: gatesServer, hidden: { command: script } } } }, "hidden-server");
    assert.equal(r.code, 1, r.out);
    expectLine(r, "mcp visible", /^✓ .*started in the agent sandbox and listed \d+ tools/);
    expectLine(r, "mcp hidden", /^✗ .*gate\.sh' failed in the agent sandbox \(as a turn would start it\)/);
    // The tool names are still checked for the servers that did start.
    expectLine(r, "tool names", /without hidden, which did not start/);
  });

  test("an identity that is not a relay member: ✗ auth with the relay's reason and whom to ask; agent.mode not offered: ✗", async () => {
    const sk = generateSecretKey();
    const stranger = nip19.npubEncode(getPublicKey(sk));
    const r = await doctor({ identity: { secret_key: nip19.nsecEncode(sk) }, agent: { mode: "plan" } }, "non-member");
    assert.equal(r.code, 1, r.out);
    const auth = line(r, "auth");
    assert.match(auth, /^✗ .*restricted: not a relay member/);
    assert.ok(auth.includes(`ask the relay admin to add ${stranger}`), auth);
    expectLine(r, "channels", /^– .*skipped/);
    expectLine(r, "agent", /^✗ .*agent\.mode 'plan' is not offered by the agent \(it offers: default, bypassPermissions\)/);
  });

  test("a relay member in no channel: ✗ channels naming the configured one; an agent that exits: ✗ with its stderr", async () => {
    const sk = generateSecretKey();
    w.relay.addRelayMember(getPublicKey(sk));
    const r = await doctor(
      {
        identity: { secret_key: nip19.nsecEncode(sk) },
        channels: [{ id: w.channel }],
        agent: { command: process.execPath, args: [BAD_AGENT, "exit"] },
      },
      "no-channel",
    );
    assert.equal(r.code, 1, r.out);
    expectLine(r, "auth", /^✓/);
    expectLine(r, "channels", /^✗ .*not a member of any channel/);
    assert.ok(r.out.includes(`${w.channel} is configured but npub1`), r.out);
    expectLine(r, "agent", /^✗ .*exited at once \(code 3\) before answering initialize/);
    assert.match(r.out, /fatal: no config found/, "the agent's stderr tail is shown");
  });

  test("relay.url: embedded starts the dev relay like the daemon and finds the seeded channel", async () => {
    const r = await doctorFile(join(REPO, "config", "demo.yaml"));
    assert.equal(r.code, 0, r.out);
    expectLine(r, "relay", /^✓ .*embedded development relay/);
    assert.match(r.out, /#release-room .*Where the team ships buzz-bridge releases/);
  });

  test("a bad config: exit 1 with the config errors, nothing else checked", async () => {
    const r = await doctor({ relay: { url: "http://nope" }, agent: { max_concurrent: 0 } }, "bad-config");
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /✗ config .*invalid \(2 errors\)/);
    assert.match(r.out, /relay\.url: expected ws:\/\/host/);
    assert.match(r.out, /agent\.max_concurrent/);
    assert.doesNotMatch(r.out, /[✓✗] relay/);
  });
});
