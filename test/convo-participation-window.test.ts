/**
 * Participation's 24 h window and `participation: channel`, end to end (daemon subprocess,
 * demo agent, dev relay): the agent's past conversations are on the relay with their real
 * times (the relay takes created_at up to two days back here), and a daemon that starts
 * with an empty state store knows them only from the relay. A thread or channel last
 * active 23 h ago continues; one last active 25 h ago does not. In a `channel` channel
 * where the agent is active, a top-level message that names no one wakes it; the same
 * message in a `thread` channel, in a `channel` channel it was never in, or one handed to
 * someone else, does not. Each "not" is judged once a later message was answered.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import { World, type DaemonProc, type Person } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { message, replyRefFor } from "../src/nostr/events.js";

const HOUR = 3600;
let w: World;
let d: DaemonProc;
let ch: { lounge: string; quiet: string; stale: string; recent: string };
const threads: { stale?: Event; recent?: Event } = {};

/** A mention of the agent posted `hoursAgo` hours back, as it would have been then. */
async function pastMention(who: Person, channel: string, hoursAgo: number, text: string): Promise<Event> {
  const t = message(channel, text, { mentions: [w.agent.pk] });
  const { event, outcome } = await (await who.relay()).send({ ...t, created_at: t.created_at - Math.round(hoursAgo * HOUR) });
  assert.equal(outcome.status, "accepted", `${outcome.reason ?? ""}`);
  return event;
}

before(async () => {
  w = await World.create({ relayLimits: { createdAtSkewSec: 2 * 24 * HOUR } });
  ch = {
    lounge: await w.addChannel({ name: "lounge" }),
    quiet: await w.addChannel({ name: "quiet" }),
    stale: await w.addChannel({ name: "stale-lounge" }),
    recent: await w.addChannel({ name: "recent-lounge" }),
  };
  threads.stale = await pastMention(w.owner, w.channel, 25, "@agent the thread from the day before yesterday");
  threads.recent = await pastMention(w.owner, w.channel, 23, "@agent the thread from yesterday");
  await pastMention(w.owner, ch.stale, 25, "@agent anyone here?");
  await pastMention(w.owner, ch.recent, 23, "@agent anyone here?");
  const channelMode = { participation: "channel" };
  d = await w.startDaemon({
    channels: [
      { id: "*" },
      { id: ch.lounge, ...channelMode },
      { id: ch.quiet, ...channelMode },
      { id: ch.stale, ...channelMode },
      { id: ch.recent, ...channelMode },
    ],
  });
  await d.waitLog((l) => l.evt === "gate.active_rebuilt");
});
after(() => w.close());

const answers = (ev: Event) => w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] });
const passedOver = (ev: Event) => d.waitLog((l) => l.evt === "gate.denied" && l.event === ev.id && l.reason === "no-mention");
/** A message that names no one: top-level, or a reply in `thread`'s thread. */
const bare = (text: string, o: { channel?: string; thread?: Event; to?: Person[] } = {}) =>
  w.owner.post(text, {
    channel: o.channel,
    mention: false,
    ...(o.thread ? { thread: replyRefFor(o.thread) } : {}),
    tags: (o.to ?? []).map((p) => ["p", p.pk]),
  });

test("a thread the agent was in 25 h ago no longer takes replies without a mention; one from 23 h ago does", async () => {
  const late = await bare("picking this up again", { thread: threads.stale });
  await passedOver(late);
  const ev = await bare("and this one?", { thread: threads.recent });
  const [reply] = await w.waitReplies(ev);
  assert.match(reply!.content, /and this one\?/);
  await d.waitLog((l) => l.evt === "gate.continued" && l.event === ev.id && l.reason === "thread");
  assert.deepEqual(await answers(late), [], "the expired thread's reply is not answered");
});

test("participation: channel — a channel active 23 h ago takes a top-level message that names no one; one active 25 h ago does not", async () => {
  const late = await bare("is this thing on?", { channel: ch.stale });
  await passedOver(late);
  const ev = await bare("is this thing on?", { channel: ch.recent });
  await w.waitReplies(ev);
  await d.waitLog((l) => l.evt === "gate.continued" && l.event === ev.id && l.reason === "channel");
  assert.deepEqual(await answers(late), [], "the expired channel's message is not answered");
});

test("participation: channel — once mentioned in a channel, its top-level messages that name no one wake the agent; not before, not handed to someone else, and not in a thread-mode channel", async () => {
  const before = await bare("morning all", { channel: ch.lounge });
  await passedOver(before);
  const mention = await w.owner.post("@agent you there?", { channel: ch.lounge });
  await w.waitReplies(mention);

  const ev = await bare("what changed in the build overnight?", { channel: ch.lounge });
  const [reply] = await w.waitReplies(ev);
  assert.match(reply!.content, /what changed in the build overnight\?/);
  await d.waitLog((l) => l.evt === "gate.continued" && l.event === ev.id && l.reason === "channel");

  const handed = await bare("teammate, yours", { channel: ch.lounge, to: [w.teammate] });
  await passedOver(handed);
  // The world's channel is in thread mode and the agent is active there (23 h ago).
  const inThreadMode = await bare("a top-level message that names no one", { channel: w.channel });
  await passedOver(inThreadMode);
  // A channel the agent was never in.
  const quiet = await bare("hello?", { channel: ch.quiet });
  await passedOver(quiet);

  const later = await bare("one more question", { channel: ch.lounge });
  await w.waitReplies(later);
  for (const ev of [before, handed, inThreadMode, quiet]) assert.deepEqual(await answers(ev), [], `not answered: ${ev.content}`);
});
