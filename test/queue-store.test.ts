/**
 * What only the SQLite file has: a DB from a newer version is refused by name, an older
 * one is migrated, WAL is on, a pending retry keeps its due time across a restart, accepted
 * work survives a SIGKILL between accept and turn end (a real child process killed
 * mid-turn; the mention is answered exactly once), and this machine's own state (cursors,
 * agent session ids). The queue's contract runs against SQLite and PostgreSQL alike, through
 * the scheduler, in queue-state-store.test.ts.
 */
import { test, describe, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Database } from "../src/base/sqlite.js";
import { SqliteStore, STORE_FILE, SCHEMA_VERSION } from "../src/queue/sqlite-store.js";
import { QueueStoreError } from "../src/queue/errors.js";
import { owner, teammate, CHANNEL, mention, fromWire, tempDir } from "../kit/queue-helpers.js";
import { place } from "./fixtures/queue-harness.js";

const here = dirname(fileURLToPath(import.meta.url));
const tmp = tempDir("bb-queue-store-");
after(() => tmp.cleanup());
let n = 0;
const freshDir = () => join(tmp.dir, `s${++n}`);
/** The queue as a daemon starting on this state directory runs it. */
const openAt = async (dir: string) => (await place("sqlite", { dir: tmp.dir, at: dir })).open();

describe("queue store", () => {
  test("a database from a newer schema version is refused with a message naming the file", () => {
    const dir = freshDir();
    SqliteStore.open(dir).closeNow();
    const file = join(dir, STORE_FILE);
    const db = new Database(file);
    db.prepare("UPDATE meta SET value = ? WHERE key = 'schema_version'").run(String(SCHEMA_VERSION + 1));
    db.close();
    assert.throws(
      () => SqliteStore.open(dir),
      (err: unknown) => {
        assert.ok(err instanceof QueueStoreError);
        assert.ok(err.message.includes(file), err.message);
        assert.match(err.message, /newer buzz-bridge/);
        return true;
      },
    );
  });

  test("a database written before mid-turn steering gets the joined_after column, its events kept", async () => {
    const dir = freshDir();
    const ev = fromWire(mention(owner, "from before the upgrade"));
    const old = SqliteStore.open(dir);
    await old.accept(ev, CHANNEL, CHANNEL, { scope: 500, total: 10_000 });
    old.closeNow();
    // What an older version left: the same tables without the column.
    const db = new Database(join(dir, STORE_FILE));
    db.exec("ALTER TABLE events DROP COLUMN joined_after");
    db.close();
    const store = SqliteStore.open(dir);
    assert.equal((await store.event(ev.id))!.joined_after, null);
    assert.equal((await store.event(ev.id))!.event.content, "from before the upgrade");
    store.closeNow();
  });

  test("WAL mode is on", () => {
    const dir = freshDir();
    SqliteStore.open(dir).closeNow();
    const db = new Database(join(dir, STORE_FILE));
    assert.deepEqual(db.pragma("journal_mode"), [{ journal_mode: "wal" }]);
    db.close();
  });

  test("this machine's state: cursors give one `since`, session ids per scope and agent, forgotten by channel", () => {
    const store = SqliteStore.open(freshDir());
    assert.equal(store.minCursor(), undefined);
    store.noteSeen(CHANNEL, 1000);
    store.noteSeen(CHANNEL, 900); // an older event does not move the cursor back
    store.noteSeen("other", 500);
    assert.deepEqual([store.cursor(CHANNEL), store.cursor("other"), store.minCursor()], [1000, 500, 500]);
    store.saveSession(`${CHANNEL}/root-a`, "claude-agent-acp", "sess-a");
    store.saveSession(`${CHANNEL}/root-b`, "claude-agent-acp", "sess-b");
    store.saveSession("other-channel", "claude-agent-acp", "sess-c");
    store.saveSession(`${CHANNEL}x/root`, "claude-agent-acp", "sess-d");
    assert.equal(store.session(`${CHANNEL}/root-a`, "claude-agent-acp"), "sess-a");
    assert.equal(store.session(`${CHANNEL}/root-a`, "goose acp"), undefined, "another agent's session id is not offered");
    store.forgetSession(`${CHANNEL}/root-a`);
    assert.equal(store.session(`${CHANNEL}/root-a`, "claude-agent-acp"), undefined);
    store.forgetChannelSessions(CHANNEL);
    assert.equal(store.session(`${CHANNEL}/root-b`, "claude-agent-acp"), undefined);
    assert.equal(store.session("other-channel", "claude-agent-acp"), "sess-c", "other channels keep theirs");
    assert.equal(store.session(`${CHANNEL}x/root`, "claude-agent-acp"), "sess-d", "a channel id with the same prefix keeps its own");
    store.closeNow();
  });

  test("a pending retry keeps its due time across a restart", async () => {
    let now = 5_000_000;
    const p = await place("sqlite", { dir: tmp.dir, now: () => now });
    const q1 = await p.open({ backoff: { baseMs: 5_000, factor: 1, maxMs: 5_000 } });
    await q1.scheduler.accept(fromWire(mention(owner, "a")), CHANNEL);
    const b = await q1.next();
    assert.equal(q1.scheduler.fail(b.turnId, "crash"), "retry");
    await q1.close();
    const q2 = await p.open();
    assert.equal(q2.lines.filter((l) => l.evt === "queue.recovered").length, 1);
    await q2.idle();
    assert.equal(q2.batches.length, 0, "not due yet");
    now += 5_000;
    // Something arrives: the scheduler looks, and the retry is due now.
    await q2.scheduler.accept(
      fromWire(mention(owner, "elsewhere", { channel: "6f1c2a4e-0000-4000-8000-000000000002" })),
      "6f1c2a4e-0000-4000-8000-000000000002",
    );
    await q2.idle();
    const again = q2.batches.find((x) => x.turnId === b.turnId);
    assert.deepEqual([again?.attempt, again?.recovered], [2, false]);
    await q2.close();
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

    const q = await openAt(dir);
    assert.equal(q.lines.filter((l) => l.evt === "queue.recovered").length, 1);
    // Both scopes run: the interrupted turn (one retry, with its published reply) and the waiting mention.
    const batches = [await q.next(), await q.next()];
    await q.idle();
    assert.deepEqual(q.batches, []);
    const retried = batches.find((b) => b.recovered)!;
    const fresh = batches.find((b) => !b.recovered)!;
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
    const answered: string[] = [];
    for (const b of batches) {
      answered.push(...b.events.map((e) => e.id));
      assert.equal(q.scheduler.complete(b.turnId), true);
    }
    await q.idle();
    assert.deepEqual(answered.sort(), [first.id, second.id].sort());
    assert.equal((await q.backend.event(first.id))?.state, "done");
    assert.equal((await q.backend.event(second.id))?.state, "done");
    await q.close();

    // And a second restart finds nothing left to do: answered once.
    const again = await openAt(dir);
    await again.idle();
    assert.deepEqual(again.batches, []);
    assert.equal(again.lines.filter((l) => l.evt === "queue.recovered").length, 0);
    await again.close();
  });
});
