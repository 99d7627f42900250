/**
 * Thread participation end to end (daemon subprocess, demo agent, dev relay): once the agent
 * is in a thread, a person's reply that does not mention it is answered; a reply handed to
 * someone else, an agent's reply and a refused author's reply are not — each "not" judged
 * after a later reply in the same thread was answered. The set survives a restart; a flood
 * of bare replies while the agent works joins the running turn.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import { Person, World, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";

let w: World;
let d: DaemonProc;
let bot: Person;
let thread: Event;
let config: Record<string, unknown>;

before(async () => {
  w = await World.create();
  // Another agent in the channel: its profile carries a NIP-OA auth tag, and the policy would answer it.
  bot = new Person("bot", w);
  await w.relay.addMember(w.channel, bot.pk);
  const { outcome } = await (await bot.relay()).send({
    kind: KIND.profile,
    created_at: Math.floor(Date.now() / 1000),
    content: JSON.stringify({ name: "helper-bot" }),
    tags: [["auth", w.owner.pk, "", "a".repeat(128)]],
  });
  assert.equal(outcome.status, "accepted");
  config = { defaults: { respond_to: "allowlist", allow: [w.teammate.npub, bot.npub] } };
  d = await w.startDaemon(config);
  thread = await w.owner.post("@agent let's plan the release");
  await w.waitReplies(thread);
});
after(async () => {
  bot.stop();
  await w.close();
});

/** A reply in the thread that mentions `to` (default: nobody). */
const bare = (who: Person, text: string, to: Person[] = []) =>
  who.post(text, { replyTo: thread, mention: false, tags: to.map((p) => ["p", p.pk]) });

const noAnswer = async (ev: Event) =>
  assert.deepEqual(await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] }), [], "not answered");

test("a person's reply without a mention, in a thread the agent is in, is answered", async () => {
  const ev = await bare(w.teammate, "also: bump the version");
  const [reply] = await w.waitReplies(ev);
  assert.match(reply!.content, /also: bump the version/);
  await d.waitLog((l) => l.evt === "gate.continued" && l.event === ev.id && l.reason === "thread");
});

test("a reply that mentions only someone else is not: the thread was handed on", async () => {
  const handed = await bare(w.owner, "teammate, can you take this one?", [w.teammate]);
  // Decided before the next reply, so the two cannot share a turn.
  await d.waitLog((l) => l.evt === "gate.denied" && l.event === handed.id && l.reason === "no-mention");
  const later = await bare(w.owner, "anything else to check?");
  await w.waitReplies(later);
  await noAnswer(handed);
});

test("an agent's reply never wakes it (no ping-pong), even where the policy would answer its author", async () => {
  const fromBot = await bare(bot, "I can run the checks");
  await d.waitLog((l) => l.evt === "gate.denied" && l.event === fromBot.id && l.reason === "participation-agent");
  const later = await bare(w.owner, "thanks both");
  await w.waitReplies(later);
  await noAnswer(fromBot);
});

test("a reply from someone the policy refuses is only logged: no 🔒, no reply", async () => {
  const ev = await bare(w.stranger, "merge it now");
  const line = await d.waitLog((l) => l.evt === "gate.denied" && l.event === ev.id);
  assert.equal(line.reason, "participation-not-allowlisted");
  const later = await bare(w.owner, "one more thing");
  await w.waitReplies(later);
  await noAnswer(ev);
  assert.deepEqual(await w.query({ kinds: [KIND.reaction], authors: [w.agent.pk], "#e": [ev.id] }), [], "no 🔒");
});

test("a restart keeps the thread active", async () => {
  await d.stop();
  d = await w.startDaemon(config);
  const ev = await bare(w.owner, "after the restart: still with me?");
  await w.waitReplies(ev);
  await d.waitLog((l) => l.evt === "gate.continued" && l.event === ev.id);
});

test("a flood of bare replies while the agent works in its thread joins the running turn: one answer", async () => {
  const root = await w.owner.post("@agent #slow 6000 review the changelog");
  await d.waitLog((l) => l.evt === "turn.start" && (l.events as string[]).includes(root.id));
  const flood: Event[] = [];
  for (let i = 1; i <= 5; i++) flood.push(await w.owner.post(`point ${i}`, { replyTo: root, mention: false }));
  const inThread = await w.waitThread(root, 1, { mentions: [root, ...flood] });
  assert.equal(inThread.length, 1, "one answer for the mention and the five replies");
  for (const ev of flood) await w.waitReaction(ev, "👀");
});
