/**
 * A queue file someone else keeps locked (src/queue/lock-patience.ts): SQLite's busy wait
 * stops the daemon's event loop, so only the first write that meets the lock waits for it;
 * the next ones fail at once until one goes through, and then writes wait again. Real
 * SQLite files; the second lock is held by another process, as a `sqlite3` shell would.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { createRequire } from "node:module";
import Database from "better-sqlite3";
import { SqliteStore, STORE_FILE } from "../src/queue/sqlite-store.js";
import { tempDir } from "./fixtures/queue-helpers.js";

const tmp = tempDir("bb-lock-patience-");
after(() => tmp.cleanup());

const WAIT_MS = 2_000;
const CHANNEL = "6f1c2a4e-0000-4000-8000-000000000001";

/** How long `fn` took, and the SQLite code it threw (undefined when it went through). */
function timed(fn: () => void): { ms: number; code?: string } {
  const t = performance.now();
  try {
    fn();
    return { ms: performance.now() - t };
  } catch (err) {
    return { ms: performance.now() - t, code: String((err as { code?: unknown }).code) };
  }
}

/** Another process holds a write transaction on `file` for `ms`, then lets go; resolves once it holds it. */
async function lockElsewhere(file: string, ms: number): Promise<{ done: Promise<unknown> }> {
  const betterSqlite = createRequire(import.meta.url).resolve("better-sqlite3");
  const script = `const D = require(${JSON.stringify(betterSqlite)}); const db = new D(${JSON.stringify(file)});
db.exec("BEGIN IMMEDIATE"); process.stdout.write("locked\\n");
setTimeout(() => { db.exec("ROLLBACK"); db.close(); }, ${ms});`;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  const done = once(child, "exit");
  const [chunk] = (await once(child.stdout!, "data")) as [Buffer];
  assert.equal(chunk.toString().trim(), "locked");
  return { done };
}

test("a queue file kept locked: the first write waits, the next fail at once with SQLITE_BUSY; once one goes through, writes wait again", async () => {
  const store = SqliteStore.open(tmp.dir, { lockWaitMs: WAIT_MS });
  const file = join(tmp.dir, STORE_FILE);
  const intruder = new Database(file);
  try {
    intruder.exec("BEGIN IMMEDIATE");
    const first = timed(() => store.noteSeen(CHANNEL, 100));
    assert.equal(first.code, "SQLITE_BUSY");
    assert.ok(first.ms >= WAIT_MS * 0.9, `the first write waited for the lock (${first.ms.toFixed(0)} ms)`);

    // Three more writes while the lock lasts: none waits (they would take 3 × WAIT_MS).
    const next = [
      timed(() => store.noteSeen(CHANNEL, 101)),
      timed(() => store.markAccepted("e".repeat(64))),
      timed(() => store.saveSession(`${CHANNEL}/x`, "agent", "s1")),
    ];
    assert.deepEqual(
      next.map((r) => r.code),
      ["SQLITE_BUSY", "SQLITE_BUSY", "SQLITE_BUSY"],
    );
    const total = next.reduce((n, r) => n + r.ms, 0);
    assert.ok(total < WAIT_MS / 2, `later writes failed at once, not after a wait each (${total.toFixed(0)} ms for three)`);
  } finally {
    intruder.exec("ROLLBACK");
    intruder.close();
  }

  // The lock is gone: a write goes through (the cursor moved), and patience is back.
  assert.equal(timed(() => store.noteSeen(CHANNEL, 102)).code, undefined);
  assert.equal(store.cursor(CHANNEL), 102);
  // A short lock elsewhere is waited for again, as before the long one.
  const brief = await lockElsewhere(file, 300);
  const waited = timed(() => store.noteSeen(CHANNEL, 103));
  await brief.done;
  assert.equal(waited.code, undefined, "a write waits out a lock shorter than its patience");
  assert.equal(store.cursor(CHANNEL), 103);
  await store.close();
});
