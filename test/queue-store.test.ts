/**
 * The durable store: duplicates are no-ops, cursors give `since`, a DB from a newer
 * version is refused by name, and accepted work survives a SIGKILL between accept and
 * turn end (a real child process killed mid-turn; the mention is answered exactly once).
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
  test("an accepted event is stored once; a duplicate id is a no-op", () => {
    const store = QueueStore.open(freshDir());
    const ev = fromWire(mention(owner, "hello"));
    assert.equal(store.accept(ev, CHANNEL, CHANNEL), true);
    assert.equal(store.accept(ev, CHANNEL, CHANNEL), false);
    assert.equal(store.has(ev.id), true);
    assert.deepEqual(store.event(ev.id)?.event, ev);
    assert.equal(store.waitingEvents().length, 1);
    store.close();
  });

  test("cursors: last handled created_at per channel, and the minimum for one REQ's since", () => {
    const store = QueueStore.open(freshDir());
    assert.equal(store.minCursor(), undefined);
    store.accept(fromWire(mention(owner, "a", { created_at: 1000 })), CHANNEL, CHANNEL);
    store.noteSeen(CHANNEL, 900); // an older denied event does not move the cursor back
    store.noteSeen("other", 500);
    assert.equal(store.cursor(CHANNEL), 1000);
    assert.equal(store.cursor("other"), 500);
    assert.equal(store.minCursor(), 500);
    store.close();
  });

  test("turn records keep their published reply ids across reopen", () => {
    const dir = freshDir();
    const store = QueueStore.open(dir);
    const ev = fromWire(mention(owner, "a"));
    store.accept(ev, CHANNEL, CHANNEL);
    const id = store.startTurn(CHANNEL, CHANNEL, [ev.id]);
    store.recordReply(id, "f".repeat(64));
    store.recordReply(id, "f".repeat(64));
    store.close();
    const again = QueueStore.open(dir);
    const t = again.turn(id)!;
    assert.equal(t.state, "running");
    assert.deepEqual(t.reply_ids, ["f".repeat(64)]);
    assert.deepEqual(t.trigger_ids, [ev.id]);
    assert.equal(again.event(ev.id)?.state, "in_turn");
    again.close();
  });

  test("a database from a newer schema version is refused with a message naming the file", () => {
    const dir = freshDir();
    QueueStore.open(dir).close();
    const file = join(dir, STORE_FILE);
    const db = new Database(file);
    db.prepare("UPDATE meta SET value = ? WHERE key = 'schema_version'").run(String(SCHEMA_VERSION + 1));
    db.close();
    assert.throws(() => QueueStore.open(dir), (err: unknown) => {
      assert.ok(err instanceof QueueStoreError);
      assert.ok(err.message.includes(file), err.message);
      assert.match(err.message, /newer buzz-bridge/);
      return true;
    });
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
    const child = spawn(process.execPath, ["--import", "tsx", join(here, "fixtures", "queue-crash-child.ts"), dir, JSON.stringify([first, second])], {
      stdio: ["ignore", "pipe", "inherit"],
    });
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
    assert.deepEqual(retried.events.map((e) => e.id), [first.id]);
    assert.deepEqual(retried.publishedReplyIds, ["e".repeat(64)], "the retry knows a reply was already published");
    assert.equal(retried.attempt, 2);
    assert.deepEqual(fresh.events.map((e) => e.id), [second.id]);
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

test("prune removes finished rows past their keep time, never open work", () => {
  const store = QueueStore.open(freshDir());
  const done = fromWire(mention(owner, "done"));
  const open = fromWire(mention(owner, "open"));
  store.accept(done, CHANNEL, CHANNEL);
  store.accept(open, CHANNEL, CHANNEL);
  const t = store.startTurn(CHANNEL, CHANNEL, [done.id]);
  store.updateTurn({ id: t, state: "done", attempts: 1, next_attempt_at: 0, recovered: 0, error: null });
  store.prune(1000, Date.now() + 10_000);
  assert.equal(store.has(done.id), false);
  assert.equal(store.turn(t), undefined);
  assert.equal(store.event(open.id)?.state, "waiting");
  store.close();
});

test("agent session ids per scope survive a reopen, are keyed by agent, and are forgotten by channel", () => {
  const dir = freshDir();
  const s1 = QueueStore.open(dir);
  s1.saveSession(`${CHANNEL}/root-a`, "claude-agent-acp", "sess-a");
  s1.saveSession(`${CHANNEL}/root-b`, "claude-agent-acp", "sess-b");
  s1.saveSession("other-channel", "claude-agent-acp", "sess-c");
  s1.close();
  const s2 = QueueStore.open(dir);
  assert.equal(s2.session(`${CHANNEL}/root-a`, "claude-agent-acp"), "sess-a");
  assert.equal(s2.session(`${CHANNEL}/root-a`, "goose acp"), undefined, "another agent's session id is not offered");
  s2.forgetChannelSessions(CHANNEL);
  assert.equal(s2.session(`${CHANNEL}/root-b`, "claude-agent-acp"), undefined);
  assert.equal(s2.session("other-channel", "claude-agent-acp"), "sess-c", "other channels keep theirs");
  s2.close();
});
