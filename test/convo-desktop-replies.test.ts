/**
 * At home in Buzz Desktop, judged from the channel (one daemon, demo agent, dev relay): a
 * Desktop-shaped mention (`@Name` text and a `p` tag) is answered once, in its thread, with
 * the reply marker (and root when nested) and a `p` back to the asker — the agent's own
 * send_message reply and the bridge's fallback alike; the same text without the `p` starts
 * nothing; `reply_placement: flat` answers top-level with the `p` (a forum post still gets a
 * comment, kind 45003, in its thread); and another bot that
 * always mentions ours back is answered `policy.bot_exchanges` times in a thread, then not,
 * until a person writes there.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import { Person, World, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";

let w: World;
let d: DaemonProc;
let flat: string;
let forum: string;
/** Another team's bot: it publishes a kind 10100 directory entry, so it is an agent. */
let bot: Person;

before(async () => {
  w = await World.create();
  bot = new Person("other-bot", w);
  await w.relay.addMember(w.channel, bot.pk);
  flat = await w.addChannel({ name: "flat-room" });
  forum = await w.addChannel({ name: "questions", type: "forum" });
  const { outcome } = await (await bot.relay()).send({
    kind: KIND.agentDirectory,
    created_at: Math.floor(Date.now() / 1000),
    content: JSON.stringify({ name: "other-bot", respond_to: "anyone", channel_add_policy: "owner_only" }),
    tags: [],
  });
  assert.equal(outcome.status, "accepted");
  d = await w.startDaemon({
    defaults: { respond_to: "anyone" },
    channels: [{ id: w.channel }, { id: flat, reply_placement: "flat" }, { id: forum, reply_placement: "flat" }],
  });
});
after(async () => {
  bot.stop();
  await w.close();
});

const eTags = (ev: Event) => ev.tags.filter((t) => t[0] === "e");
const pTags = (ev: Event) => ev.tags.filter((t) => t[0] === "p").map((t) => t[1]);

test("a Desktop-shaped mention is answered once, reply-marked, with a p back to the asker; nested, with root and reply", async () => {
  const ask = await w.teammate.post("@agent what is the build status?");
  const answer = await w.waitReply(ask);
  assert.deepEqual(eTags(answer), [["e", ask.id, "", "reply"]]);
  assert.deepEqual(pTags(answer), [w.teammate.pk], "in the asker's Mentions feed");
  assert.deepEqual(
    answer.tags.find((t) => t[0] === "h"),
    ["h", w.channel],
  );

  const again = await w.teammate.post("@agent and the tests?", { replyTo: answer });
  const second = await w.waitReply(again);
  assert.deepEqual(eTags(second), [
    ["e", ask.id, "", "root"],
    ["e", again.id, "", "reply"],
  ]);
  assert.deepEqual(pTags(second), [w.teammate.pk]);
});

test("the bridge's own reply (the agent's final text) carries the reply marker and the p too", async () => {
  const ask = await w.stranger.post("@agent summarise #final-only");
  const answer = await w.waitReply(ask);
  assert.deepEqual(eTags(answer), [["e", ask.id, "", "reply"]]);
  assert.deepEqual(pTags(answer), [w.stranger.pk]);
});

test("a forum post is answered with a comment (45003) in its thread, with the p, flat or not", async () => {
  const post = await w.teammate.post("@agent how do I cut a release?", { channel: forum, kind: KIND.forumPost });
  const answer = await w.waitReply(post);
  assert.equal(answer.kind, KIND.forumComment);
  assert.deepEqual(eTags(answer), [["e", post.id, "", "reply"]]);
  assert.deepEqual(pTags(answer), [w.teammate.pk]);
});

test("the same @Name text without a p tag starts nothing", async () => {
  const bare = await w.teammate.post("@agent what is the build status?", { mention: false });
  await w.assertNeverAnswered([bare]);
  assert.ok(!d.logs.some((l) => l.evt === "turn.start" && (l.events as string[]).includes(bare.id)));
});

test("reply_placement: flat answers a top-level mention top-level, quoting it, with the p", async () => {
  const ask = await w.teammate.post("@agent flat please", { channel: flat });
  await w.settled([ask]);
  const answers = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#q": [ask.id] });
  assert.equal(answers.length, 1, "exactly one answer");
  const [answer] = answers;
  assert.deepEqual(eTags(answer!), [], "top-level as Desktop shows it: no e tag");
  assert.deepEqual(pTags(answer!), [w.teammate.pk]);
  assert.deepEqual(await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ask.id] }), [], "nothing in its thread");
});

test("another bot that always mentions ours back is answered bot_exchanges (3) times in a thread, then a person is answered", async () => {
  let ask = await bot.post("@agent ping");
  const root = ask;
  for (let i = 1; i <= 3; i++) {
    const answer = await w.waitReply(ask);
    assert.deepEqual(pTags(answer), [bot.pk]);
    ask = await bot.post(`@agent ping ${i}`, { replyTo: answer });
  }
  // The fourth: silence, one line; a fifth changes neither.
  await d.waitLog((l) => l.evt === "gate.denied" && l.event === ask.id && l.reason === "loop-guard");
  const fifth = await bot.post("@agent ping again", { replyTo: ask });
  await d.waitLog((l) => l.evt === "gate.denied" && l.event === fifth.id && l.reason === "loop-guard");
  assert.equal(d.logs.filter((l) => l.evt === "gate.loop_guard").length, 1);
  // An agent's bare reply in the thread never continues it either.
  const bare = await bot.post("just saying", { replyTo: ask, mention: false });
  await d.waitLog((l) => l.evt === "gate.denied" && l.event === bare.id && l.reason === "participation-agent");

  const person = await w.teammate.post("@agent what did you two decide?", { replyTo: fifth });
  await w.waitReply(person);
  for (const silenced of [ask, fifth])
    assert.deepEqual(await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [silenced.id] }), [], "not answered");
  const threadAnswers = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [root.id] });
  assert.equal(threadAnswers.length, 4, "three answers to the bot, one to the person");
  // The person's message started the count again: the bot is answered once more.
  const after = await bot.post("@agent ping after the person", { replyTo: person });
  await w.waitReply(after);
});
