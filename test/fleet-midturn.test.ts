/**
 * Talking to the agent while it works, in a fleet: two daemons of one identity on one
 * PostgreSQL database and the dev relay, both hearing every event. A long scripted turn runs
 * on whichever daemon took its thread (held until something stops it, `#hang`, or until the
 * test lets it end, `#hold`: nothing depends on the machine's speed); a message posted in that thread
 * mid-turn, an edit and a deletion must reach that running turn or the shared queue —
 * whichever daemon stored or heard them first — and nothing is answered twice. The relay
 * is the oracle (replies per thread, what they say), the database says which turn took
 * each message.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import type { Event } from "nostr-tools";
import type { World, DaemonProc } from "../kit/world.js";
import { useFleet } from "./fixtures/fleet.js";
import { PG_SCHEMA } from "../src/queue/pg-migrations.js";
import { KIND } from "../src/nostr/kinds.js";
import { waitFor } from "../kit/wait.js";

let w: World;
let url: string;
let daemons: DaemonProc[] = [];
let queueRoom: string;
const fleet = useFleet({
  channels: ["fleet-steer-room", "fleet-queue-room"],
  setUp: async (f) => {
    w = f.w;
    queueRoom = f.channels[1]!;
    if (f.skip) return;
    const db = await f.database();
    url = db.url;
    const configs = f.configs(2, () => ({
      agent: { max_concurrent: 2, session_scope: "thread" },
      defaults: { respond_to: "allowlist", allow: [w.teammate.npub] },
      channels: [{ id: w.channel }, { id: queueRoom, mid_turn: "queue" }],
    }));
    daemons = await f.start(configs, db.env);
  },
});

const threadReplies = (root: Event) => w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [root.id] });

/** Exactly `n` agent messages in the thread, counted once every turn on both daemons has ended (World.waitThread). */
const exactlyReplies = (root: Event, n: number): Promise<Event[]> => w.waitThread(root, n, { timeoutMs: 40_000 });

/** The first daemon to log a line matching `pred`; a timeout shows every daemon's last lines. */
function firstToLog(pred: (l: Record<string, unknown>) => boolean, timeoutMs = 20_000): Promise<DaemonProc> {
  return Promise.any(daemons.map((d) => d.waitLog(pred, timeoutMs).then(() => d))).catch((err: AggregateError) => {
    throw new Error(err.errors.map((e) => String(e)).join("\n---\n"));
  });
}

/** Posts a long turn and resolves with it and the daemon that runs it (the holder of its thread), once the agent has it. */
async function longTurn(text: string, channel = w.channel): Promise<{ root: Event; holder: DaemonProc; other: DaemonProc }> {
  const from = daemons.map((d) => d.logs.length);
  const root = await w.owner.post(`@agent ${text}`, { channel });
  const holder = await firstToLog((l) => l.evt === "turn.session" && String(l.scope).endsWith(root.id), 30_000);
  const i = daemons.indexOf(holder);
  await holder.waitLog((l) => holder.logs.indexOf(l) >= from[i]! && l.evt === "agent.turn_start");
  return { root, holder, other: daemons.find((d) => d !== holder)! };
}

/** The turns (id, state, triggers) whose triggers include `id`, from the fleet's database. */
async function turnsWith(id: string): Promise<Array<{ id: string; state: string; trigger_ids: string[] }>> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(`SELECT id, state, trigger_ids FROM ${PG_SCHEMA}.turns WHERE trigger_ids ? $1`, [id])).rows;
  } finally {
    await c.end();
  }
}

const mentions = (d: DaemonProc, evt: string, id: string) =>
  d.logs.filter((l) => l.evt === evt && Array.isArray(l.events) && (l.events as string[]).includes(id));

test("a message posted mid-turn in a thread held by one daemon of two reaches that running turn; one reply covers both", async (ctx) => {
  if (fleet.skip) return ctx.skip(fleet.skip);
  const { root, holder, other } = await longTurn("#hang refactor the build");
  const second = await w.teammate.post("@agent also use the staging branch", { replyTo: root, channel: w.channel });
  const [reply] = await exactlyReplies(root, 1);
  assert.match(reply!.content, /Asked: @agent also use the staging branch/);
  assert.match(reply!.content, /Framing: Mid-turn: the messages below arrived while you were working/);
  const line = await holder.waitLog((l) => l.evt === "turn.steered" && (l.events as string[]).includes(second.id));
  assert.equal(line.method, "cancel-merge");
  assert.deepEqual(mentions(other, "turn.steered", second.id), [], "the daemon not holding the thread did not steer it");
  // The turn's end is logged, then recorded in the database: read it once it is no longer running.
  const turns = await waitFor(
    async () => {
      const found = await turnsWith(second.id);
      return found.some((t) => t.state === "running") ? undefined : found;
    },
    { timeoutMs: 20_000, what: "the turn recorded as ended" },
  );
  assert.equal(turns.length, 1, "the mid-turn message is a trigger of exactly one turn");
  assert.deepEqual(turns[0]!.trigger_ids, [root.id, second.id], "it joined the running turn of the thread");
  assert.equal(turns[0]!.state, "done");
  await w.waitReaction(second, "👀");
});

test("an edit of a queued mention replaces its text in the fleet's queue: the turn that takes it sees the edited text", async (ctx) => {
  if (fleet.skip) return ctx.skip(fleet.skip);
  // mid_turn: queue, so the thread's second message waits for the running turn to end.
  // The turn is held until the edit is in the queue, then let end: the edit finds the mention still waiting.
  const release = join(w.dir, "release-fleet-queue");
  const { root } = await longTurn(`#hold ${release} long job`, queueRoom);
  const queued = await w.teammate.post("@agent deploy to production", { replyTo: root, channel: queueRoom });
  const edit = await w.teammate.edit(queued, "@agent deploy to staging");
  await firstToLog((l) => l.evt === "queue.edited" && l.event === edit.id);
  writeFileSync(release, "");
  const replies = await exactlyReplies(root, 2);
  const answer = replies.find((r) => /Asked: @agent deploy to/.test(r.content));
  assert.ok(answer, "the queued mention was answered");
  assert.match(answer!.content, /Asked: @agent deploy to staging/);
  assert.doesNotMatch(answer!.content, /production/);
  assert.doesNotMatch(answer!.content, /Framing:/, "it had its own turn, not a mid-turn correction");
  assert.equal((await turnsWith(edit.id)).length, 0, "the edit was no message of its own");
});

test("an edit of a mention whose turn runs on one daemon of two is steered into that turn as a correction; one reply", async (ctx) => {
  if (fleet.skip) return ctx.skip(fleet.skip);
  const { root, holder, other } = await longTurn("#hang long job");
  const edit = await w.owner.edit(root, "@agent #final-only short job instead");
  await holder.waitLog((l) => l.evt === "turn.steered" && (l.events as string[]).includes(edit.id));
  const [reply] = await exactlyReplies(root, 1);
  assert.match(reply!.content, /Asked: @agent #final-only short job instead/);
  assert.match(reply!.content, /Labels: Correction/);
  assert.deepEqual(mentions(other, "turn.steered", edit.id), []);
  assert.deepEqual(
    (await turnsWith(edit.id)).map((t) => t.trigger_ids),
    [[root.id, edit.id]],
  );
});

test("a deletion of a running turn's only mention stops the turn on the daemon running it; a deleted queued mention gets no turn", async (ctx) => {
  if (fleet.skip) return ctx.skip(fleet.skip);
  const { root, holder } = await longTurn("#hang doomed job", queueRoom);
  const queued = await w.owner.post("@agent and this too", { replyTo: root, channel: queueRoom });
  const dropped = await w.owner.delete(queued);
  await firstToLog((l) => l.evt === "queue.deleted" && l.event === dropped.id);
  const del = await w.owner.delete(root);
  await holder.waitLog((l) => l.evt === "turn.deleted" && l.event === del.id);
  await holder.waitLog((l) => l.evt === "turn.end" && l.status === "cancelled" && String(l.scope ?? "").endsWith(root.id));
  await w.laterAnswer({ channel: queueRoom }); // a later mention answered and every turn ended: the thread is final
  assert.equal((await threadReplies(root)).length, 0, "neither the stopped turn nor the deleted mention was answered");
  assert.equal(
    daemons.flatMap((d) => d.logs.filter((l) => l.evt === "queue.deleted" && l.event === dropped.id)).length,
    1,
    "one daemon dropped it",
  );
  assert.equal(daemons.flatMap((d) => d.logs.filter((l) => l.evt === "turn.deleted")).length, 1);
  assert.deepEqual(await turnsWith(queued.id), []);
});
