/**
 * `run` refuses to start on what `doctor` would mark ✗, with the same words: an agent
 * command that is not installed, an agent.cwd or state_dir this user cannot write; and a
 * relay that refuses the identity names the npub to add instead of asking whether the
 * relay is up.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateSecretKey, getPublicKey, nip19 } from "nostr-tools";
import { REPO, World } from "../kit/world.js";
import { cliFor } from "./fixtures/run-as.js";
import { runCli } from "./fixtures/cli.js";

let w: World;
before(async () => {
  w = await World.create();
});
after(() => w.close());

async function doctorLine(configFile: string, name: string): Promise<string> {
  const r = await runCli(["doctor", "-c", configFile, "--timeout", "20s"]);
  const line = r.stdout.split("\n").find((l) => new RegExp(`^[✓✗–] ${name}\\s`).test(l));
  assert.ok(line, r.stdout);
  return line.replace(new RegExp(`^[✓✗–] ${name}\\s+`), "");
}

test("an agent command that is not installed: run exits 2 at once with doctor's message", async () => {
  const file = w.writeConfig({ agent: { command: "no-such-agent-xyz" }, state_dir: join(w.dir, "state-noagent") }, "noagent.yaml");
  const d = await w.startDaemon({}, { configFile: file, waitStarted: false });
  assert.equal(await d.exited, 2);
  const expected = "agent command 'no-such-agent-xyz' not found on PATH; install it or set agent.command to its full path";
  assert.ok(
    d.logs.some((l) => l.evt === "daemon.start_failed" && l.err === expected),
    d.raw().slice(-2000),
  );
  assert.ok(!d.logs.some((l) => l.evt === "agent.circuit_open" || l.evt === "daemon.started"), "refused before anything started");
  assert.equal(await doctorLine(file, "agent"), expected);
});

test("an agent.cwd that cannot be created: run exits 2 with doctor's message", async () => {
  const blocker = join(w.dir, "a-file");
  writeFileSync(blocker, "");
  const file = w.writeConfig({ agent: { cwd: join(blocker, "agents", "{channel}") }, state_dir: join(w.dir, "state-nocwd") }, "nocwd.yaml");
  const d = await w.startDaemon({}, { configFile: file, waitStarted: false });
  assert.equal(await d.exited, 2);
  const expected = `cannot create agent.cwd ${join(blocker, "agents")}: ENOTDIR (${blocker} is a file); set agent.cwd to a directory this user can write (or create it and chown it to this user)`;
  assert.ok(
    d.logs.some((l) => l.evt === "daemon.start_failed" && l.err === expected),
    d.raw().slice(-2000),
  );
  assert.equal(await doctorLine(file, "agent cwd"), expected);
});

test("a state_dir this user cannot write: run exits 2 with doctor's message", async () => {
  const isRoot = process.getuid?.() === 0;
  const state = join(w.dir, "state-readonly");
  mkdirSync(state, { mode: 0o755 });
  if (!isRoot) chmodSync(state, 0o555);
  const file = w.writeConfig({ state_dir: state }, "rostate.yaml");
  chmodSync(w.dir, 0o755);
  chmodSync(file, 0o644);
  // As root, the check is made as another user (nobody), as the service would run.
  const as = isRoot ? { uid: 65534, gid: 65534 } : {};
  const cli = cliFor(isRoot ? { uid: 65534, gid: 65534 } : undefined, w.dir);
  const run = spawnSync(process.execPath, [cli, "run", "-c", file], { encoding: "utf8", timeout: 30_000, ...as });
  assert.equal(run.status, 2, run.stdout + run.stderr);
  const who = isRoot ? "uid 65534 (nobody)" : `uid ${process.getuid!()}`;
  const expected = `state_dir ${state} is not writable by ${who}`;
  assert.match(
    run.stdout,
    new RegExp(`"err":"${expected.replace(/[()]/g, "\\$&")} \\(EACCES\\); set state_dir to a directory this user owns`),
    run.stdout,
  );
  const doctor = await runCli(["doctor", "-c", file, "--timeout", "20s"], { cli, ...as });
  assert.match(doctor.stdout, new RegExp(`^✗ state\\s+${expected.replace(/[()]/g, "\\$&")} \\(EACCES\\)`, "m"), doctor.stdout);
});

test("a relay that does not admit the identity: run names the npub to add, not 'is the relay up?'", async () => {
  const sk = generateSecretKey();
  const file = w.writeConfig({ identity: { secret_key: nip19.nsecEncode(sk) }, state_dir: join(w.dir, "state-outsider") }, "outsider.yaml");
  const d = await w.startDaemon({}, { configFile: file, waitStarted: false });
  const line = await d.waitLog((l) => l.evt === "daemon.discovery_retry");
  const npub = nip19.npubEncode(getPublicKey(sk));
  assert.equal(line.npub, npub);
  assert.match(
    String(line.msg),
    new RegExp(
      `^the relay refused this identity: (relay_membership_required: )?restricted: not a relay member: ask the relay admin to add ${npub} as a relay member; retrying$`,
    ),
  );
  const refused = await d.waitLog((l) => l.evt === "relay.auth_refused");
  assert.equal(refused.msg, `restricted: not a relay member: ask the relay admin to add ${npub} as a relay member`);
  assert.equal(await d.stop(), 0);
});

test("an agent that never gets through start-up: the thread hears so at once, not 'crashed' after the retry wait", async () => {
  const badAgent = join(REPO, "test", "fixtures", "agent-bad.mjs");
  const file = w.writeConfig(
    {
      agent: { command: process.execPath, args: [badAgent, "exit"] },
      queue: { retry_base: "5s", retry_max: "5m" },
      state_dir: join(w.dir, "state-neverstarts"),
      relay: { presence: false },
    },
    "neverstarts.yaml",
  );
  const d = await w.startDaemon({}, { configFile: file });
  const ev = await w.owner.post("@agent are you there?");
  const notice = await w.waitReply(ev, 60_000);
  assert.match(
    notice.content,
    /^Sorry, I could not answer this: agent '.*agent-bad\.mjs exit' never started \(\d+ attempts, the last: exited .*code 3.*\); not trying again until \d\d:\d\d:\d\d UTC/,
    notice.content,
  );
  assert.doesNotMatch(notice.content, /crashed/);
  assert.ok(!d.logs.some((l) => l.evt === "queue.turn_retry" && l.retry_in_ms === 300_000), "no 5-minute retry was scheduled");
  assert.equal(await d.stop(), 0);
});
