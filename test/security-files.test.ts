/**
 * The files the daemon trusts, checked as OpenSSH checks ~/.ssh (docs/security.md): the key
 * file, the config file and the state directory must belong to this user or root and be
 * writable by no one else, and so must the directories above them (a sticky one like /tmp
 * is fine; a group-writable one is a warning). What is refused says what to run to fix it.
 * queue.db, its -wal and -shm are this user's alone. Through the real CLI (`check`, `run`);
 * as root, "another user" is nobody, given the file with chown.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI, World, type DaemonProc } from "../kit/world.js";

const isRoot = process.getuid?.() === 0;
const NOBODY = 65534;

let w: World;
let dir: string;
before(async () => {
  w = await World.create({ channelName: "files-room" });
  dir = mkdtempSync(join(tmpdir(), "bb-files-"));
});
after(async () => {
  await w.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A directory of its own (0700) holding the config and, in keys/ (0700), the key file (0600) it names. */
function layout(name: string, config: Record<string, unknown> = {}): { home: string; keys: string; key: string; file: string } {
  const home = join(dir, name);
  mkdirSync(home, { mode: 0o700 });
  const keys = join(home, "keys");
  mkdirSync(keys, { mode: 0o700 });
  const key = join(keys, "agent.nsec");
  writeFileSync(key, `${w.agent.nsec}\n`, { mode: 0o600 });
  const cfg = w.config({ state_dir: join(home, "state"), ...config });
  const identity = cfg.identity as Record<string, unknown>;
  delete identity.secret_key;
  identity.secret_key_file = key;
  const file = join(home, "bridge.yaml");
  writeFileSync(file, JSON.stringify(cfg), { mode: 0o600 });
  return { home, keys, key, file };
}

/** How a daemon started on `file` ended up: its exit code, or "started" (then it is stopped). */
async function runOutcome(file: string): Promise<{ code: number | null | "started"; d: DaemonProc }> {
  const d = await w.startDaemon({}, { configFile: file, waitStarted: false });
  const code = await Promise.race([d.exited, d.waitLog((l) => l.evt === "daemon.started", 60_000).then(() => "started" as const)]);
  if (code === "started") await d.stop();
  return { code, d };
}

const check = (file: string) => spawnSync(process.execPath, [CLI, "check", "-c", file], { encoding: "utf8", timeout: 30_000 });

test("a key file owned by another user is refused, with the chown that fixes it", {
  skip: !isRoot && "needs root to give a file to another user",
}, () => {
  const l = layout("key-owner");
  chownSync(l.key, NOBODY, NOBODY);
  const r = check(l.file);
  assert.equal(r.status, 1, r.stdout);
  assert.match(
    r.stderr,
    new RegExp(`secret key file ${l.key} is owned by uid ${NOBODY}, not by root: that user can change it; chown root ${l.key}$`, "m"),
  );
});

test("a key in a directory anyone may write to (0777, not sticky) is refused; one in a sticky directory is fine", () => {
  const l = layout("key-dir");
  chmodSync(l.keys, 0o777);
  const r = check(l.file);
  assert.equal(r.status, 1, r.stdout);
  assert.match(
    r.stderr,
    new RegExp(
      `${l.keys}, a directory above secret key file ${l.key}, has mode 0777: anyone can replace what is in it; move secret key file elsewhere, or chmod o-w ${l.keys}`,
    ),
  );
  chmodSync(l.keys, 0o1777);
  assert.equal(check(l.file).status, 0, "sticky, as /tmp: others cannot replace what they do not own");
});

test("a config file that group or others may write is refused; a group-writable directory above it is a warning", () => {
  const l = layout("config-mode");
  for (const mode of [0o666, 0o620]) {
    chmodSync(l.file, mode);
    const r = check(l.file);
    assert.equal(r.status, 1, `mode ${mode.toString(8)}: ${r.stdout}`);
    assert.match(
      r.stderr,
      new RegExp(`config file ${l.file} has mode 0${mode.toString(8)}: (everyone|its group) can change it; chmod go-w ${l.file}`),
    );
  }
  chmodSync(l.file, 0o600);
  chmodSync(l.home, 0o770);
  const r = check(l.file);
  assert.equal(r.status, 0, r.stderr);
  assert.match(
    r.stderr,
    new RegExp(
      `warning: ${l.file}: ${l.home}, a directory above config file ${l.file}, has mode 0770: its group can replace what is in it; chmod g-w ${l.home}`,
    ),
  );
});

test("an existing state_dir others may write to is refused by run (exit 2) and marked by doctor", async () => {
  const l = layout("state-mode");
  mkdirSync(join(l.home, "state"), { mode: 0o777 });
  chmodSync(join(l.home, "state"), 0o777);
  const { code, d } = await runOutcome(l.file);
  assert.equal(code, 2);
  const expected = `state_dir ${join(l.home, "state")} has mode 0777: everyone can change it; chmod go-w ${join(l.home, "state")} (700 keeps it to its owner)`;
  assert.ok(
    d.logs.some((x) => x.evt === "daemon.start_failed" && x.err === expected),
    d.raw().slice(-2000),
  );
  const doctor = spawnSync(process.execPath, [CLI, "doctor", "-c", l.file, "--timeout", "20s"], { encoding: "utf8", timeout: 90_000 });
  assert.match(doctor.stdout, new RegExp(`^✗ state\\s+${expected.replace(/[()]/g, "\\$&")}`, "m"), doctor.stdout);
});

test("a state_dir owned by another user is refused by run", {
  skip: !isRoot && "needs root to give a directory to another user",
}, async () => {
  const l = layout("state-owner");
  mkdirSync(join(l.home, "state"), { mode: 0o700 });
  chownSync(join(l.home, "state"), NOBODY, NOBODY);
  const { code, d } = await runOutcome(l.file);
  assert.equal(code, 2);
  assert.ok(
    d.logs.some(
      (x) => x.evt === "daemon.start_failed" && String(x.err).startsWith(`state_dir ${join(l.home, "state")} is owned by uid ${NOBODY}`),
    ),
    d.raw().slice(-2000),
  );
});

test("queue.db, its -wal and -shm are created 0600, and ones left readable by others are closed down at start", async () => {
  const l = layout("queue-mode");
  const d = await w.startDaemon({}, { configFile: l.file });
  const ev = await w.owner.post("@agent hello");
  await w.waitReplies(ev, 1, 30_000);
  const state = join(l.home, "state");
  const modes = () =>
    ["queue.db", "queue.db-wal", "queue.db-shm"].map((f) => `${f} ${(statSync(join(state, f)).mode & 0o777).toString(8)}`);
  assert.deepEqual(modes(), ["queue.db 600", "queue.db-wal 600", "queue.db-shm 600"]);
  assert.equal(await d.stop(), 0);
  chmodSync(join(state, "queue.db"), 0o644);
  const again = await w.startDaemon({}, { configFile: l.file });
  const ev2 = await w.owner.post("@agent again");
  await w.waitReplies(ev2, 1, 30_000);
  assert.equal(statSync(join(state, "queue.db")).mode & 0o777, 0o600);
  assert.equal(await again.stop(), 0);
});
