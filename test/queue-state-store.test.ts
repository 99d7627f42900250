/**
 * The state store's contract, run against both backends: SQLite (a file under
 * state_dir) and PostgreSQL (a real server started by the test, in a fresh database per
 * test). Whatever the scheduler, dispatcher and gate rely on must hold in both.
 */
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { SqliteStateStore } from "../src/queue/sqlite-state.js";
import { PostgresStore } from "../src/queue/pg-store.js";
import type { StateStore } from "../src/queue/state-store.js";
import { owner, teammate, agent, CHANNEL, mention, fromWire, tempDir } from "./fixtures/queue-helpers.js";
import { postgresOrSkip, type PgServer } from "./fixtures/postgres.js";

const tmp = tempDir("bb-state-store-");
let pgServer: PgServer | undefined;
let pgSkip: string | undefined;
before(async () => {
  const r = await postgresOrSkip();
  if (typeof r === "string") pgSkip = r;
  else pgServer = r;
});
after(async () => {
  await pgServer?.stop();
  tmp.cleanup();
});

/** A place for one test's state, opened as often as the test likes (reopen = restart). */
interface Backend {
  name: string;
  place(): Promise<() => Promise<StateStore>>;
}

let n = 0;
const backends: Backend[] = [
  {
    name: "sqlite",
    async place() {
      const dir = join(tmp.dir, `s${++n}`);
      return async () => SqliteStateStore.open(dir);
    },
  },
  {
    name: "postgres",
    async place() {
      const url = await pgServer!.createDatabase();
      return () => PostgresStore.open({ url, identity: agent.pk });
    },
  },
];

for (const b of backends) {
  describe(`state store contract (${b.name})`, () => {
    const t = (name: string, fn: (open: () => Promise<StateStore>) => Promise<void>) =>
      test(name, async (ctx) => {
        if (b.name === "postgres" && pgSkip) return ctx.skip(pgSkip);
        await fn(await b.place());
      });

    t("an accepted event is stored once; a duplicate id is a no-op", async (open) => {
      const store = await open();
      const ev = fromWire(mention(owner, "hello"));
      assert.equal(await store.accept(ev, CHANNEL, CHANNEL), true);
      assert.equal(await store.accept(ev, CHANNEL, CHANNEL), false);
      assert.equal(await store.has(ev.id), true);
      assert.deepEqual((await store.event(ev.id))?.event, ev);
      assert.deepEqual(
        (await store.waitingEvents()).map((e) => e.id),
        [ev.id],
      );
      await store.close();
    });

    t("cursors: last handled created_at per channel, and the minimum for one REQ's since", async (open) => {
      const store = await open();
      assert.equal(await store.minCursor(), undefined);
      await store.accept(fromWire(mention(owner, "a", { created_at: 1000 })), CHANNEL, CHANNEL);
      await store.noteSeen(CHANNEL, 900); // an older denied event does not move the cursor back
      await store.noteSeen("other", 500);
      assert.equal(await store.cursor(CHANNEL), 1000);
      assert.equal(await store.cursor("other"), 500);
      assert.equal(await store.minCursor(), 500);
      await store.close();
    });

    t("waiting events come back oldest first, with their scope and channel", async (open) => {
      const store = await open();
      const late = fromWire(mention(owner, "late", { created_at: 2000 }));
      const early = fromWire(mention(teammate, "early", { created_at: 1000 }));
      await store.accept(late, CHANNEL, `${CHANNEL}/${late.id}`);
      await store.accept(early, CHANNEL, `${CHANNEL}/${early.id}`);
      const waiting = await store.waitingEvents();
      assert.deepEqual(
        waiting.map((e) => [e.id, e.scope, e.channel, e.created_at, e.state]),
        [
          [early.id, `${CHANNEL}/${early.id}`, CHANNEL, 1000, "waiting"],
          [late.id, `${CHANNEL}/${late.id}`, CHANNEL, 2000, "waiting"],
        ],
      );
      await store.close();
    });

    t("turn records keep their published reply ids (once each) across reopen", async (open) => {
      const store = await open();
      const ev = fromWire(mention(owner, "a"));
      await store.accept(ev, CHANNEL, CHANNEL);
      const id = await store.startTurn(CHANNEL, CHANNEL, [ev.id]);
      await store.recordReply(id, "f".repeat(64));
      await store.recordReply(id, "f".repeat(64));
      await store.recordReply(id, "e".repeat(64));
      await store.close();
      const again = await open();
      const turn = (await again.turn(id))!;
      assert.equal(turn.state, "running");
      assert.deepEqual(turn.reply_ids, ["f".repeat(64), "e".repeat(64)]);
      assert.deepEqual(turn.trigger_ids, [ev.id]);
      const stored = await again.event(ev.id);
      assert.equal(stored?.state, "in_turn");
      assert.equal(stored?.turn_id, id);
      assert.deepEqual(
        (await again.eventsOfTurn(id)).map((e) => e.id),
        [ev.id],
      );
      assert.deepEqual(
        (await again.openTurns()).map((x) => x.id),
        [id],
      );
      assert.deepEqual(await again.waitingEvents(), []);
      await again.close();
    });

    t("a turn's final state carries over to its events; a queued retry keeps them in_turn", async (open) => {
      const store = await open();
      const a = fromWire(mention(owner, "a"));
      const b2 = fromWire(mention(owner, "b"));
      await store.accept(a, CHANNEL, CHANNEL);
      await store.accept(b2, CHANNEL, CHANNEL);
      const id = await store.startTurn(CHANNEL, CHANNEL, [a.id, b2.id]);
      await store.updateTurn({ id, state: "queued", attempts: 1, next_attempt_at: 12345, recovered: 0, error: "agent crashed" });
      const queued = (await store.turn(id))!;
      assert.equal(queued.state, "queued");
      assert.equal(queued.next_attempt_at, 12345);
      assert.equal(queued.error, "agent crashed");
      assert.equal((await store.event(a.id))?.state, "in_turn");
      await store.updateTurn({ id, state: "failed", attempts: 3, next_attempt_at: 0, recovered: 1, error: "gave up" });
      assert.equal((await store.event(a.id))?.state, "failed");
      assert.equal((await store.event(b2.id))?.state, "failed");
      assert.deepEqual(await store.openTurns(), []);
      await store.close();
    });

    t("a turn starts with those of its events still waiting; an event ended meanwhile stays ended", async (open) => {
      const store = await open();
      const a = fromWire(mention(owner, "a"));
      const gone = fromWire(mention(owner, "deleted before its turn"));
      await store.accept(a, CHANNEL, CHANNEL);
      await store.accept(gone, CHANNEL, CHANNEL);
      assert.equal(await store.dropWaiting(gone.id), true);
      assert.equal(await store.dropWaiting(gone.id), false, "dropped once");
      const id = await store.startTurn(CHANNEL, CHANNEL, [a.id, gone.id]);
      assert.deepEqual((await store.turn(id))?.trigger_ids, [a.id]);
      assert.equal((await store.event(gone.id))?.state, "deleted");
      assert.equal(await store.dropWaiting(a.id), false, "an event in a turn is not dropped");
      await store.close();
    });

    t("a mid-turn message joins the running turn of its scope once, then can be handed back to wait", async (open) => {
      const store = await open();
      const first = fromWire(mention(owner, "first"));
      const steer = fromWire(mention(teammate, "also this"));
      const elsewhere = fromWire(mention(owner, "another thread"));
      await store.accept(first, CHANNEL, `${CHANNEL}/t1`);
      await store.accept(steer, CHANNEL, `${CHANNEL}/t1`);
      await store.accept(elsewhere, CHANNEL, `${CHANNEL}/t2`);
      const id = await store.startTurn(`${CHANNEL}/t1`, CHANNEL, [first.id]);
      await store.recordReply(id, "f".repeat(64));
      assert.deepEqual(await store.joinTurn(id, [steer.id, elsewhere.id]), [steer.id], "only a waiting event of the turn's scope joins");
      assert.deepEqual(await store.joinTurn(id, [steer.id]), [], "once");
      const joined = await store.event(steer.id);
      assert.deepEqual([joined?.state, joined?.turn_id, joined?.joined_after], ["in_turn", id, 1], "with the replies recorded before it");
      assert.deepEqual((await store.turn(id))?.trigger_ids, [first.id, steer.id]);
      await store.leaveTurn(id, [steer.id]);
      const left = await store.event(steer.id);
      assert.deepEqual([left?.state, left?.turn_id, left?.joined_after], ["waiting", null, null]);
      assert.deepEqual((await store.turn(id))?.trigger_ids, [first.id]);
      await store.updateTurn({ id, state: "queued", attempts: 1, next_attempt_at: 0, recovered: 0, error: "retry" });
      assert.deepEqual(await store.joinTurn(id, [steer.id]), [], "nothing joins a turn that is not running");
      await store.close();
    });

    t("an edit replaces a message's text until an agent has it: waiting or in a queued retry, not running or ended", async (open) => {
      const store = await open();
      const ev = fromWire(mention(owner, "deploy to production"));
      await store.accept(ev, CHANNEL, CHANNEL);
      assert.equal(await store.replaceQueuedContent(ev.id, "deploy to staging", "e".repeat(64)), true);
      const edited = (await store.event(ev.id))!.event as typeof ev & { edited?: string };
      assert.deepEqual(
        [edited.content, edited.edited, edited.id, edited.created_at],
        ["deploy to staging", "e".repeat(64), ev.id, ev.created_at],
      );
      const id = await store.startTurn(CHANNEL, CHANNEL, [ev.id]);
      assert.equal(await store.replaceQueuedContent(ev.id, "too late", "d".repeat(64)), false, "its turn runs");
      await store.updateTurn({ id, state: "queued", attempts: 1, next_attempt_at: 0, recovered: 0, error: "retry" });
      assert.equal(await store.replaceQueuedContent(ev.id, "deploy to qa", "c".repeat(64)), true, "a retry not yet started takes the edit");
      await store.updateTurn({ id, state: "done", attempts: 2, next_attempt_at: 0, recovered: 0, error: null });
      assert.equal(await store.replaceQueuedContent(ev.id, "after the answer", "b".repeat(64)), false);
      assert.equal((await store.event(ev.id))?.event.content, "deploy to qa");
      assert.equal(await store.replaceQueuedContent("0".repeat(64), "unknown", "a".repeat(64)), false);
      await store.close();
    });

    t("events can be marked refused or cancelled in one call", async (open) => {
      const store = await open();
      const a = fromWire(mention(owner, "a"));
      const c = fromWire(mention(owner, "c"));
      await store.accept(a, CHANNEL, CHANNEL);
      await store.accept(c, CHANNEL, CHANNEL);
      await store.setEventStates([a.id, c.id], "cancelled");
      assert.equal((await store.event(a.id))?.state, "cancelled");
      assert.equal((await store.event(c.id))?.state, "cancelled");
      assert.deepEqual(await store.waitingEvents(), []);
      await store.close();
    });

    t("a control command is claimed once", async (open) => {
      const store = await open();
      assert.equal(await store.claimControl("c".repeat(64), 1000), true);
      assert.equal(await store.claimControl("c".repeat(64), 1000), false);
      await store.close();
    });

    t("claimOnce: once per window per key, again after the window", async (open) => {
      const store = await open();
      assert.equal(await store.claimOnce("denied:a:b", 60_000), true);
      assert.equal(await store.claimOnce("denied:a:b", 60_000), false);
      assert.equal(await store.claimOnce("denied:a:c", 60_000), true, "another key is independent");
      assert.equal(await store.claimOnce("denied:a:b", 0), true, "a window that has passed allows it again");
      await store.close();
    });

    t("the conversations the agent is in: the latest activity wins, seen by the next daemon to open the store", async (open) => {
      const s1 = await open();
      await s1.markActive("thread:r1", 5_000);
      await s1.markActive("thread:r1", 3_000); // an older time (a rebuild from the relay) never goes back
      await s1.markActive("channel:c1", 4_000);
      await s1.markActive("thread:old", 1_000);
      assert.equal(await s1.claimOnce("thread:r2", 60_000), true, "a claim of that name is not a conversation");
      // Another daemon of the fleet, or this one after a restart, while the first is still open.
      const s2 = await open();
      assert.deepEqual(await s2.activeSince(2_000), [
        { key: "channel:c1", at: 4_000 },
        { key: "thread:r1", at: 5_000 },
      ]);
      await s2.markActive("thread:r1", 9_000);
      assert.deepEqual(await s1.activeSince(6_000), [{ key: "thread:r1", at: 9_000 }]);
      await s2.close();
      await s1.close();
    });

    t("prune removes finished rows past their keep time, never open work", async (open) => {
      const store = await open();
      const done = fromWire(mention(owner, "done"));
      const pending = fromWire(mention(owner, "open"));
      await store.accept(done, CHANNEL, CHANNEL);
      await store.accept(pending, CHANNEL, CHANNEL);
      const id = await store.startTurn(CHANNEL, CHANNEL, [done.id]);
      await store.updateTurn({ id, state: "done", attempts: 1, next_attempt_at: 0, recovered: 0, error: null });
      await store.prune(1000, Date.now() + 10_000);
      assert.equal(await store.has(done.id), false);
      assert.equal(await store.turn(id), undefined);
      assert.equal((await store.event(pending.id))?.state, "waiting");
      await store.close();
    });

    t("agent session ids per scope survive a reopen, are keyed by agent, and are forgotten by channel", async (open) => {
      const s1 = await open();
      await s1.saveSession(`${CHANNEL}/root-a`, "claude-agent-acp", "sess-a");
      await s1.saveSession(`${CHANNEL}/root-b`, "claude-agent-acp", "sess-b");
      await s1.saveSession("other-channel", "claude-agent-acp", "sess-c");
      await s1.saveSession(`${CHANNEL}x/root`, "claude-agent-acp", "sess-d");
      await s1.close();
      const s2 = await open();
      assert.equal(await s2.session(`${CHANNEL}/root-a`, "claude-agent-acp"), "sess-a");
      assert.equal(await s2.session(`${CHANNEL}/root-a`, "goose acp"), undefined, "another agent's session id is not offered");
      await s2.forgetSession(`${CHANNEL}/root-a`);
      assert.equal(await s2.session(`${CHANNEL}/root-a`, "claude-agent-acp"), undefined);
      await s2.forgetChannelSessions(CHANNEL);
      assert.equal(await s2.session(`${CHANNEL}/root-b`, "claude-agent-acp"), undefined);
      assert.equal(await s2.session("other-channel", "claude-agent-acp"), "sess-c", "other channels keep theirs");
      assert.equal(await s2.session(`${CHANNEL}x/root`, "claude-agent-acp"), "sess-d", "a channel id with the same prefix keeps its own");
      await s2.close();
    });
  });
}
