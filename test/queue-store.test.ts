/**
 * What only the SQLite file has: a DB from a newer version is refused by name, an older
 * one is migrated, WAL is on, and accepted work survives a SIGKILL between accept and
 * turn end (a real child process killed mid-turn; the mention is answered exactly once).
 * The store's contract (duplicates are no-ops, cursors give `since`, turn records, prune,
 * session ids) runs against SQLite and PostgreSQL alike in queue-state-store.test.ts.
 */
import { test, describe, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { QueueStore, STORE_FILE, SCHEMA_VERSION } from "../src/queue/store.js";
import { QueueStoreError } from "../src/queue/errors.js";
import { Scheduler } from "../src/queue/scheduler.js";
import { owner, teammate, CHANNEL, mention, fromWire, captureLogger, tempDir } from "./fixtures/queue-helpers.js";

const here = dirname(fileURLToPath(import.meta.url));
const tmp = tempDir("bb-queue-store-");
after(() => tmp.cleanup());
let n = 0;
const freshDir = () => join(tmp.dir, `s${++n}`);

describe("queue store", () => {
  test("a database from a newer schema version is refused with a message naming the file", () => {
    const dir = freshDir();
    QueueStore.open(dir).close();
    const file = join(dir, STORE_FILE);
    const db = new Database(file);
    db.prepare("UPDATE meta SET value = ? WHERE key = 'schema_version'").run(String(SCHEMA_VERSION + 1));
    db.close();
    assert.throws(
      () => QueueStore.open(dir),
      (err: unknown) => {
        assert.ok(err instanceof QueueStoreError);
        assert.ok(err.message.includes(file), err.message);
        assert.match(err.message, /newer buzz-bridge/);
        return true;
      },
    );
  });

  test("a database written before mid-turn steering gets the joined_after column, its events kept", () => {
    const dir = freshDir();
    const ev = fromWire(mention(owner, "from before the upgrade"));
    const old = QueueStore.open(dir);
    old.accept(ev, CHANNEL, CHANNEL);
    old.close();
    // What an older version left: the same tables without the column.
    const db = new Database(join(dir, STORE_FILE));
    db.exec("ALTER TABLE events DROP COLUMN joined_after");
    db.close();
    const store = QueueStore.open(dir);
    assert.equal(store.event(ev.id)!.joined_after, null);
    assert.equal(store.event(ev.id)!.event.content, "from before the upgrade");
    store.close();
  });

  test("WAL mode is on", () => {
    const dir = freshDir();
    QueueStore.open(dir).close();
    const db = new Database(join(dir, STORE_FILE));
    assert.equal(db.pragma("journal_mode", { simple: true }), "wal");
    db.close();
  });
});

describe("crash safety", () => {
  test("SIGKILL between accept and turn end: the events are re-queued and answered once", async () => {
    const dir = freshDir();
    const first = fromWire(mention(owner, "first question"));
    const second = fromWire(mention(teammate, "second question"));
    const child = spawn(
      process.execPath,
      ["--import", "tsx", join(here, "fixtures", "queue-crash-child.ts"), dir, JSON.stringify([first, second])],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    try {
      let out = "";
      child.stdout!.setEncoding("utf8");
      while (!out.includes("\n")) {
        const [chunk] = (await once(child.stdout!, "data")) as [string];
        out += chunk;
      }
      assert.match(out, /^running \d+/);
    } finally {
      child.kill("SIGKILL");
      await once(child, "exit").catch(() => undefined);
    }
    assert.equal(child.signalCode, "SIGKILL");

    const store = QueueStore.open(dir);
    const { logger, lines } = captureLogger();
    const answered: string[] = [];
    const scheduler = new Scheduler({ store, logger, sessionScope: "thread", maxConcurrent: 4 });
    assert.deepEqual(scheduler.recover(), { events: 1, turns: 1 });
    assert.equal(lines.filter((l) => l.evt === "queue.recovered").length, 1);

    // Both scopes run: the interrupted turn (one retry, with its published reply) and the waiting mention.
    const batches = [scheduler.next(), scheduler.next()];
    assert.equal(scheduler.next(), null);
    const retried = batches.find((b) => b?.recovered)!;
    const fresh = batches.find((b) => b && !b.recovered)!;
    assert.deepEqual(
      retried.events.map((e) => e.id),
      [first.id],
    );
    assert.deepEqual(retried.publishedReplyIds, ["e".repeat(64)], "the retry knows a reply was already published");
    assert.equal(retried.attempt, 2);
    assert.deepEqual(
      fresh.events.map((e) => e.id),
      [second.id],
    );
    for (const b of batches) {
      answered.push(...b!.events.map((e) => e.id));
      assert.equal(scheduler.complete(b!.turnId), true);
    }
    assert.deepEqual(answered.sort(), [first.id, second.id].sort());
    assert.equal(store.event(first.id)?.state, "done");
    assert.equal(store.event(second.id)?.state, "done");
    scheduler.close();
    store.close();

    // And a second restart finds nothing left to do: answered once.
    const again = QueueStore.open(dir);
    const s2 = new Scheduler({ store: again, logger, sessionScope: "thread", maxConcurrent: 4 });
    assert.deepEqual(s2.recover(), { events: 0, turns: 0 });
    assert.equal(s2.next(), null);
    again.close();
  });
});
