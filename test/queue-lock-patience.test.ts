/**
 * A queue file someone else keeps locked (src/queue/lock-patience.ts): SQLite's busy wait
 * stops the daemon's event loop, so only the first write that meets the lock waits for it;
 * the next ones fail at once until one goes through, and then writes wait again. Real
 * SQLite files, the lock held by another process as a `sqlite3` shell would; judged by
 * whether writes go through, never by a clock.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Database } from "../src/base/sqlite.js";
import { LockPatience } from "../src/queue/lock-patience.js";
import { SqliteStore, STORE_FILE } from "../src/queue/sqlite-store.js";
import { tempDir } from "../kit/queue-helpers.js";

const tmp = tempDir("bb-lock-patience-");
after(() => tmp.cleanup());

/** How long the holder keeps the lock once asked to let go: well within a write's patience (LOCK_WAIT_MS, 5 s). */
const RELEASE_AFTER_MS = 1_000;
const CHANNEL = "6f1c2a4e-0000-4000-8000-000000000001";

/** The SQLite code `fn` threw, or undefined when it went through. */
function codeOf(fn: () => void): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    return String((err as { code?: unknown }).code);
  }
}

/**
 * Another process that takes a write transaction on `file` when asked (`lock`) and lets go
 * of it RELEASE_AFTER_MS after being asked (`release`): a write that waits for the lock goes
 * through, one that does not fails with SQLITE_BUSY. Judged by that outcome, not by a clock.
 */
function lockHolder(file: string) {
  const script = `const { DatabaseSync } = require("node:sqlite"); const db = new DatabaseSync(${JSON.stringify(file)});
require("node:readline").createInterface({ input: process.stdin }).on("line", (l) => {
  if (l === "lock") { db.exec("BEGIN IMMEDIATE"); console.log("locked"); }
  if (l === "release") setTimeout(() => { db.exec("ROLLBACK"); console.log("released"); }, ${RELEASE_AFTER_MS});
  if (l === "exit") { db.close(); process.exit(0); }
});`;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout! });
  const said = (what: string) => new Promise<void>((resolve) => lines.on("line", (l) => l === what && resolve()));
  /** Resolves once the line reached the pipe, so the holder reads it while this process is blocked in a write. */
  const tell = (line: string) =>
    new Promise<void>((resolve, reject) => child.stdin!.write(`${line}\n`, (err) => (err ? reject(err) : resolve())));
  return {
    lock: async () => {
      const locked = said("locked");
      await tell("lock");
      await locked;
    },
    /** Lets go RELEASE_AFTER_MS from now; resolves when the holder is told, and `released` when it has let go. */
    release: async () => {
      const released = said("released");
      await tell("release");
      return { released };
    },
    exit: async () => {
      const exited = once(child, "exit");
      await tell("exit");
      await exited;
    },
  };
}

test("a queue file kept locked: once a write gave up on the lock, the next fail at once; once one goes through, writes wait again", async () => {
  const store = SqliteStore.open(tmp.dir);
  const holder = lockHolder(join(tmp.dir, STORE_FILE));
  try {
    await holder.lock();
    // Held past the write's patience: it gives up.
    assert.equal(
      codeOf(() => store.noteSeen(CHANNEL, 100)),
      "SQLITE_BUSY",
    );

    // The holder lets go a moment from now. A waiting write would go through; these do not wait.
    const { released } = await holder.release();
    assert.deepEqual(
      [
        codeOf(() => store.noteSeen(CHANNEL, 101)),
        codeOf(() => store.markAccepted("e".repeat(64))),
        codeOf(() => store.saveSession(`${CHANNEL}/x`, "agent", "s1")),
      ],
      ["SQLITE_BUSY", "SQLITE_BUSY", "SQLITE_BUSY"],
      "writes after one gave up fail at once instead of waiting for the lock",
    );
    await released;

    // The lock is gone: a write goes through (the cursor moved), and patience is back.
    assert.equal(
      codeOf(() => store.noteSeen(CHANNEL, 102)),
      undefined,
    );
    assert.equal(store.cursor(CHANNEL), 102);
    await holder.lock();
    await holder.release();
    assert.equal(
      codeOf(() => store.noteSeen(CHANNEL, 103)),
      undefined,
      "a write waits out a short lock again",
    );
    assert.equal(store.cursor(CHANNEL), 103);
  } finally {
    await holder.exit();
    await store.close();
  }
});

/** A database of its own under `tmp` with one guarded insert, beside a lock holder on the same file. */
function guardedTable(name: string, waitMs?: number) {
  const file = join(tmp.dir, name);
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY)");
  const patience = waitMs === undefined ? new LockPatience(db) : new LockPatience(db, waitMs);
  const { insert } = patience.guard({ insert: db.prepare("INSERT INTO t VALUES (?)") });
  return { db, insert: (id: number) => codeOf(() => insert.run(id)), holder: lockHolder(file) };
}

test("a write that fails for another reason than the lock leaves writes patient: the next waits out a short lock", async () => {
  const { db, insert, holder } = guardedTable("other-error.sqlite");
  try {
    assert.equal(insert(1), undefined);
    assert.equal(insert(1), "SQLITE_CONSTRAINT");
    await holder.lock();
    await holder.release();
    assert.equal(insert(2), undefined, "a write after a constraint error waits for the lock and goes through");
  } finally {
    await holder.exit();
    db.close();
  }
});

test("the patience is the one asked for, not the driver's own: a lock held past it is given up on", async () => {
  // Well under RELEASE_AFTER_MS: the holder lets go only after the write gave up.
  const { db, insert, holder } = guardedTable("short-patience.sqlite", 100);
  try {
    await holder.lock();
    const { released } = await holder.release();
    assert.equal(insert(1), "SQLITE_BUSY");
    await released;
    assert.equal(insert(2), undefined);
  } finally {
    await holder.exit();
    db.close();
  }
});
