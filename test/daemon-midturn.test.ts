/**
 * Talking to an agent while it works, through the real daemon: a mention starts a long
 * scripted turn, a second message arrives in the same thread while it runs, and the channel's
 * `mid_turn` decides what happens. Nothing depends on how fast the machine is: a turn the
 * second message should stop is held open until it is stopped (`#hang`); one that should end
 * by itself is held until the daemon has put the second message aside, then released by the
 * test (`#hold`). The oracle is the relay: exactly one reply
 * per mention in its thread, or exactly one for both when the second was steered into the
 * running turn (nobody gets two replies because their message arrived mid-turn).
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { World, type DaemonProc, type Person } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { storedTurns } from "../kit/reliability-helpers.js";

let w: World;
let d: DaemonProc;
const ch: Record<"steer" | "interrupt" | "ownerInterrupt" | "queue", string> = { steer: "", interrupt: "", ownerInterrupt: "", queue: "" };

before(async () => {
  w = await World.create({ channelName: "steer-room" });
  ch.steer = w.channel;
  ch.interrupt = await w.addChannel({ name: "interrupt-room" });
  ch.ownerInterrupt = await w.addChannel({ name: "owner-interrupt-room" });
  ch.queue = await w.addChannel({ name: "queue-room" });
  d = await w.startDaemon({
    defaults: { respond_to: "allowlist", allow: [w.teammate.npub] },
    // The agent stops when cancelled; on a loaded machine it may take a while to say so, and a
    // kill after the grace would be another test's behaviour (a failed turn, retried as a batch).
    agent: { cancel_grace: "60s" },
    channels: [
      { id: ch.steer },
      { id: ch.interrupt, mid_turn: "interrupt" },
      { id: ch.ownerInterrupt, mid_turn: "owner-interrupt" },
      { id: ch.queue, mid_turn: "queue" },
    ],
    http: { listen: "127.0.0.1:0" },
  });
});
after(() => w.close());

/** Starts a turn in `channel` (`#hang`: until stopped; `#hold <file>`: until the file exists) and resolves once the agent has been prompted with it. */
async function longTurn(channel: string, how: "#hang" | `#hold ${string}`): Promise<Event> {
  const from = d.logs.length;
  const first = await w.owner.post(`@agent ${how} refactor the build`, { channel });
  await d.waitLog((l) => d.logs.indexOf(l) >= from && l.evt === "agent.turn_start");
  return first;
}

async function midTurnMessage(who: Person, first: Event, text: string): Promise<Event> {
  return who.post(`@agent ${text}`, { replyTo: first, channel: first.tags.find((t) => t[0] === "h")![1] });
}

/** Waits until the daemon has put `ev` aside for the next turn (it arrived mid-turn), then lets the held turn end. */
async function putAside(ev: Event, release: string): Promise<void> {
  await d.waitLog((l) => l.evt === "queue.mid_turn_queued" && l.event === ev.id);
  writeFileSync(release, "");
}

/** Exactly `n` agent messages in the thread of `first`, counted once every turn has ended (World.waitThread). */
const exactlyReplies = (first: Event, n: number): Promise<Event[]> => w.waitThread(first, n, { timeoutMs: 30_000 });

test("steer (agent without native steering): the running turn is cancelled and re-prompted with the new message framed as arriving mid-work; one reply covers both", async () => {
  const first = await longTurn(ch.steer, "#hang");
  const second = await midTurnMessage(w.teammate, first, "also use the staging branch");
  const [reply] = await exactlyReplies(first, 1);
  assert.match(reply!.content, /Asked: @agent also use the staging branch/);
  assert.match(reply!.content, /Framing: Mid-turn: the messages below arrived while you were working/);
  assert.match(reply!.content, /Labels: Added while you were working/);
  const line = await d.waitLog((l) => l.evt === "turn.steered" && Array.isArray(l.events) && (l.events as string[]).includes(second.id));
  assert.equal(line.method, "cancel-merge");
  await w.waitReaction(second, "👀");
  await w.waitReaction(first, "✅");
  const url = (await d.waitLog((l) => l.evt === "daemon.started")).http as string;
  const metrics = await (await fetch(`${url}/metrics`)).text();
  assert.match(metrics, /^buzz_bridge_mid_turn_delivery_seconds_count\{method="cancel-merge"\} 1$/m, "one mid-turn delivery measured");
});

test("interrupt: the new message supersedes the running request; one reply, framed as superseding", async () => {
  const first = await longTurn(ch.interrupt, "#hang");
  const second = await midTurnMessage(w.teammate, first, "stop that, just report the version");
  const [reply] = await exactlyReplies(first, 1);
  assert.match(reply!.content, /Asked: @agent stop that, just report the version/);
  assert.match(reply!.content, /Framing: Mid-turn: the messages below supersede the earlier request/);
  await d.waitLog((l) => l.evt === "turn.superseded" && Array.isArray(l.events) && (l.events as string[]).includes(second.id));
});

test("owner-interrupt: a teammate's mid-turn message waits for the next turn (its own reply); the owner's interrupts", async () => {
  const release = join(w.dir, "release-owner-interrupt");
  const first = await longTurn(ch.ownerInterrupt, `#hold ${release}`);
  const queued = await midTurnMessage(w.teammate, first, "and the changelog please");
  await putAside(queued, release);
  const replies = await exactlyReplies(first, 2);
  assert.ok(
    replies.some((r) => /Asked: @agent and the changelog please/.test(r.content) && !/Framing:/.test(r.content)),
    "the teammate's message got its own turn, not framed as mid-turn",
  );
  assert.ok(!d.logs.some((l) => (l.evt === "turn.superseded" || l.evt === "turn.steered") && (l.events as string[]).includes(queued.id)));

  const again = await longTurn(ch.ownerInterrupt, "#hang");
  const owners = await midTurnMessage(w.owner, again, "cancel that, ship it as is");
  const [reply] = await exactlyReplies(again, 1);
  assert.match(reply!.content, /Asked: @agent cancel that, ship it as is/);
  await d.waitLog((l) => l.evt === "turn.superseded" && (l.events as string[]).includes(owners.id));
});

test("queue: a mid-turn message waits until the turn ends and gets its own reply", async () => {
  const release = join(w.dir, "release-queue");
  const first = await longTurn(ch.queue, `#hold ${release}`);
  const second = await midTurnMessage(w.teammate, first, "one more thing");
  await putAside(second, release);
  const replies = await exactlyReplies(first, 2);
  const forSecond = replies.find((r) => /Asked: @agent one more thing/.test(r.content));
  assert.ok(forSecond, "the queued message was answered");
  assert.doesNotMatch(forSecond!.content, /Framing:/);
  assert.ok(!d.logs.some((l) => l.evt === "turn.steered" && (l.events as string[]).includes(second.id)));
});

test("a restart in the middle of a steer: the steered message was recorded before delivery and is replayed once; one reply in the thread", async () => {
  const first = await longTurn(ch.steer, "#hang");
  // The merged prompt runs long too, so the daemon dies while the steer is under way.
  const second = await midTurnMessage(w.teammate, first, "#slow 20000 also bump the version");
  await d.waitLog((l) => l.evt === "turn.steered" && (l.events as string[]).includes(second.id));
  d.proc.kill("SIGKILL");
  await d.exited;
  d = await w.startDaemon({}, { configFile: d.configFile });
  await d.waitLog((l) => l.evt === "queue.recovered");
  // The recovered turn runs both messages again; the steered one is its last (the anchor).
  await d.waitLog((l) => l.evt === "agent.turn_start");
  const more = await midTurnMessage(w.owner, first, "#final-only no need to wait, answer now");
  const [reply] = await exactlyReplies(first, 1);
  assert.match(reply!.content, /Asked: @agent #final-only no need to wait/);
  const turns = await storedTurns(w);
  for (const ev of [first, second, more]) {
    assert.equal(turns.filter((t) => t.trigger_ids.includes(ev.id)).length, 1, `${ev.content} is a trigger of exactly one turn`);
  }
});

test("a restart mid-steer after the turn had already posted: the steered message is still answered, once; the earlier post stays", async () => {
  const from = d.logs.length;
  const first = await w.owner.post("@agent #reply-first #slow 20000 migrate the database", { channel: ch.steer });
  // The first answer is posted while the turn runs: seen once it is there, not once the turn ends.
  const [early] = await w.waitEvents({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [first.id] }, (e) => e.length > 0, 30_000);
  assert.match(early!.content, /A first answer/);
  const second = await midTurnMessage(w.teammate, first, "#slow 4000 also keep a backup");
  await d.waitLog((l) => d.logs.indexOf(l) >= from && l.evt === "turn.steered" && (l.events as string[]).includes(second.id));
  d.proc.kill("SIGKILL");
  await d.exited;
  d = await w.startDaemon({}, { configFile: d.configFile });
  await d.waitLog((l) => l.evt === "turn.resumed" && (l.events as string[]).includes(second.id));
  const replies = await exactlyReplies(first, 2);
  assert.ok(
    replies.some((r) => /Asked: @agent #slow 4000 also keep a backup/.test(r.content)),
    "the steered message was answered after the restart",
  );
  const turns = await storedTurns(w);
  assert.equal(turns.filter((t) => t.trigger_ids.includes(second.id)).length, 1);
});
