/**
 * Edits (kind 40003) and deletions (kind 5) of mentions, through the real daemon. One turn
 * at a time (`max_concurrent: 1`), so a second mention waits in the queue while a scripted
 * turn holds the slot: until the test has seen what it waits for and lets it end (`#hold`),
 * or until the edit or deletion stops it (`#hang`), never for a time the machine's speed
 * would have to honour. The relay is the oracle: what replies exist, in which thread,
 * saying what.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { World, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";

let w: World;
let d: DaemonProc;

before(async () => {
  w = await World.create({ channelName: "amend-room" });
  d = await w.startDaemon({ defaults: { respond_to: "allowlist", allow: [w.teammate.npub] }, agent: { max_concurrent: 1 } });
});
after(() => w.close());

const threadReplies = (root: Event) => w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [root.id] });

let holds = 0;

/**
 * A turn holding the only slot; resolves once the agent has been prompted, with `release()`,
 * which lets a `#hold` turn end (a `#hang` turn ends only when cancelled).
 */
async function busy(how: "#hang" | "#hold"): Promise<{ job: Event; release: () => void }> {
  const from = d.logs.length;
  const file = join(w.dir, `release-amend-${++holds}`);
  const job = await w.owner.post(`@agent ${how === "#hold" ? `#hold ${file}` : how} long job`);
  await d.waitLog((l) => d.logs.indexOf(l) >= from && l.evt === "agent.turn_start");
  return { job, release: () => writeFileSync(file, "") };
}

/** Exactly `n` agent messages in the thread of `root`, counted once every turn has ended (World.waitThread). */
const settledReplies = (root: Event, n: number): Promise<Event[]> => w.waitThread(root, n, { timeoutMs: 30_000 });

test("an edit of a queued mention replaces its text before its turn; someone else's edit of it is refused and logged", async () => {
  const { job, release } = await busy("#hold");
  const queued = await w.teammate.post("@agent deploy to production");
  const foreign = await w.stranger.edit(queued, "@agent deploy to the stranger's server");
  const refused = await d.waitLog((l) => l.evt === "gate.edit_refused" && l.event === foreign.id && l.reason === "not-author");
  assert.equal(refused.author, w.stranger.npub, "the author as an npub, as in every gate line");
  const edit = await w.teammate.edit(queued, "@agent deploy to staging");
  await d.waitLog((l) => l.evt === "queue.edited" && l.event === edit.id);
  release();
  const [reply] = await settledReplies(queued, 1);
  assert.match(reply!.content, /Asked: @agent deploy to staging/);
  assert.doesNotMatch(reply!.content, /production|stranger/);
  await settledReplies(job, 1);
});

test("an edit while its turn runs is a mid-turn correction: the turn is re-prompted with it (steer); one reply, in the edited message's thread", async () => {
  const { job } = await busy("#hang");
  const edit = await w.owner.edit(job, "@agent #final-only short job instead");
  const line = await d.waitLog((l) => l.evt === "turn.steered" && (l.events as string[]).includes(edit.id));
  assert.equal(line.method, "cancel-merge");
  const [reply] = await settledReplies(job, 1);
  assert.match(reply!.content, /Asked: @agent #final-only short job instead/);
  assert.match(reply!.content, /Labels: Correction/);
});

test("a deletion of a queued mention drops it: no turn, no reply; the next mention is answered", async () => {
  const { job, release } = await busy("#hold");
  const doomed = await w.teammate.post("@agent never mind this one");
  const del = await w.teammate.delete(doomed);
  await d.waitLog((l) => l.evt === "queue.deleted" && l.event === del.id);
  release();
  await settledReplies(job, 1);
  const next = await w.owner.post("@agent are you there?");
  await settledReplies(next, 1);
  assert.equal((await threadReplies(doomed)).length, 0, "the deleted mention got no reply");
  assert.ok(!d.logs.some((l) => l.evt === "turn.start_failed"));
});

test("a deletion (here NIP-29's 9005) of a running turn's only mention stops the turn: no reply; someone else's deletion is refused", async () => {
  const { job } = await busy("#hang");
  const foreign = await w.teammate.delete(job);
  const refused = await d.waitLog((l) => l.evt === "gate.delete_refused" && l.event === foreign.id && l.reason === "not-author");
  assert.equal(refused.author, w.teammate.npub);
  const del = await w.owner.groupDelete(job);
  await d.waitLog((l) => l.evt === "turn.deleted" && l.event === del.id);
  await d.waitLog((l) => l.evt === "turn.end" && l.status === "cancelled" && (l.events as string[]).includes(job.id));
  const next = await w.owner.post("@agent next please");
  await settledReplies(next, 1);
  assert.equal((await threadReplies(job)).length, 0, "the stopped turn did not reply");
});

test("a storm of 20 edits to a queued mention rewrites one queue entry: one reply, with the last text", async () => {
  const { job, release } = await busy("#hold");
  const queued = await w.owner.post("@agent version 0");
  const edits: Event[] = [];
  for (let i = 1; i <= 20; i++) edits.push(await w.owner.edit(queued, `@agent version ${i}`));
  await d.waitLog((l) => l.evt === "queue.edited" && l.event === edits.at(-1)!.id);
  release();
  const [reply] = await settledReplies(queued, 1);
  assert.match(reply!.content, /Asked: @agent version 20$/m);
  assert.equal(d.logs.filter((l) => l.evt === "queue.edited" && edits.some((e) => e.id === l.event)).length, 20, "each edit logged once");
  await settledReplies(job, 1);
});
