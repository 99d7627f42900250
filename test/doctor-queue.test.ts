/**
 * `buzz-bridge doctor` checks the queue file in state_dir the way SQLite can: readable, of a
 * schema this code understands, and intact (`PRAGMA quick_check`). A damaged queue.db — which
 * `run` refuses — is a ✗ saying what to do, and doctor exits 1; an intact one is a ✓ with
 * what waits in it. Run as a person runs it (`node dist/cli.js doctor`), against the dev relay.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { closeSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { CLI, World } from "../kit/world.js";
import { SqliteStore } from "../src/queue/sqlite-store.js";
import { mention, fromWire, owner, CHANNEL } from "../kit/queue-helpers.js";

let w: World;
before(async () => {
  w = await World.create();
});
after(() => w.close());

function doctor(configFile: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [CLI, "doctor", "-c", configFile, "--timeout", "30s"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
    proc.stderr.on("data", (d: Buffer) => (out += d.toString()));
    proc.on("error", reject);
    proc.on("exit", (code) => resolve({ code, out }));
  });
}

const queueLine = (out: string) => out.split("\n").find((l) => /^[✓✗–] queue\s/.test(l)) ?? `no queue line in:\n${out}`;

/** A state dir whose queue holds `n` waiting mentions, written and closed as a daemon leaves it. */
async function stateWith(name: string, n: number): Promise<string> {
  const dir = join(w.dir, name);
  const store = SqliteStore.open(dir);
  for (let i = 0; i < n; i++)
    await store.accept(fromWire(mention(owner, `waiting ${i} ${"x".repeat(400)}`)), CHANNEL, `${CHANNEL}/${i}`, {
      scope: 500,
      total: 10_000,
    });
  store.closeNow();
  return dir;
}

test("an intact queue is a ✓ naming what waits in it", { timeout: 90_000 }, async () => {
  const dir = await stateWith("intact", 3);
  const r = await doctor(w.writeConfig({ state_dir: dir }, "intact.yaml"));
  assert.match(queueLine(r.out), /^✓ queue\s+\S+queue\.db is intact \(PRAGMA quick_check\): 3 mentions waiting, 0 turns open$/);
  assert.equal(r.code, 0, r.out);
});

test("a damaged queue.db is a ✗ saying what to do, and doctor exits 1", { timeout: 90_000 }, async () => {
  const dir = await stateWith("damaged", 40);
  // A page in the middle of the file overwritten, as a failing disk or a bad copy leaves it.
  const fd = openSync(join(dir, "queue.db"), "r+");
  writeSync(fd, Buffer.alloc(4096, 0xab), 0, 4096, 4096 * 3);
  closeSync(fd);
  const r = await doctor(w.writeConfig({ state_dir: dir }, "damaged.yaml"));
  const l = queueLine(r.out);
  assert.match(l, /^✗ queue\s+\S+queue\.db is damaged \(database disk image is malformed\): restore it from a backup/);
  assert.equal(r.code, 1);
});
