/**
 * Questions back to people, end to end: the demo agent asks a form question over ACP
 * (`#ask`), the daemon posts a question card (kind 44300) and a plain message with numbered
 * options in the thread, and what the agent gets back is what the owner answered — judged
 * from the agent's reply in the channel.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import { World, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { cardAnswer, type CardAnswer } from "../src/nostr/cards.js";

let w: World;
let d: DaemonProc;
const config = (timeout: string) => ({ questions: { timeout } });

before(async () => {
  w = await World.create();
  // Long enough that no question closes before a loaded machine has answered it; the
  // timeout test runs a daemon of its own with a short one.
  d = await w.startDaemon(config("5m"));
});
after(() => w.close());

/** The question's card and plain message in the thread of `ev`. */
async function questionOf(ev: Event): Promise<{ card: Event; text: Event }> {
  const [card] = await w.waitEvents({ kinds: [KIND.questionCard], authors: [w.agent.pk], "#e": [ev.id] }, (e) => e.length > 0);
  const [text] = await w.waitEvents({ kinds: [KIND.message], authors: [w.agent.pk], "#q": [card!.id] }, (e) => e.length > 0);
  return { card: card!, text: text! };
}

async function answerCard(who: World["owner"], card: Event, answer: CardAnswer): Promise<void> {
  const { outcome } = await (await who.relay()).send(cardAnswer(card, answer, w.channel));
  assert.equal(outcome.status, "accepted");
}

/** The agent's report of what its question got back. */
async function answerReported(ev: Event): Promise<string> {
  const replies = await w.waitEvents({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] }, (e) =>
    e.some((m) => /question: /.test(m.content)),
  );
  return /question: .*/.exec(replies.find((m) => /question: /.test(m.content))!.content)![0];
}

test("the owner answers the card: the agent gets accept with the option's value", async () => {
  const ev = await w.owner.post("@agent #ask");
  const { card, text } = await questionOf(ev);
  const form = JSON.parse(card.content) as { prompt: string; options: { label: string }[]; allowCustom: boolean; questionKey: string };
  assert.equal(form.prompt, "Which colour should the button be?");
  assert.deepEqual(
    form.options.map((o) => o.label),
    ["Red", "Green", "Blue"],
  );
  assert.equal(form.allowCustom, true);
  assert.ok(
    card.tags.some((t) => t[0] === "p" && t[1] === w.owner.pk),
    "the card is the owner's to answer",
  );
  assert.match(text.content, /^1\. Red$/m);
  assert.match(text.content, /^2\. Green — the brand colour$/m);
  await answerCard(w.owner, card, { action: "accept", answer: "Green" });
  assert.equal(await answerReported(ev), 'question: accept {"question_0":"green"}');
  await d.waitLog((l) => l.evt === "question.answered" && l.card === card.id && l.action === "accept" && l.via === "card");
});

test("a reply to the plain message answers it (here: decline), and is not taken as a new mention", async () => {
  const ev = await w.owner.post("@agent #ask");
  const { text } = await questionOf(ev);
  const reply = await w.owner.post("decline", { replyTo: text });
  assert.equal(await answerReported(ev), "question: decline");
  await w.waitReaction(ev, "✅");
  assert.ok(!d.logs.some((l) => l.evt === "gate.accepted" && l.event === reply.id), "the answer was not queued as a mention");
  // A later mention is answered as usual, so the answer's not being answered is a fact, not a delay.
  const next = await w.owner.post("@agent anything else?", { replyTo: ev });
  await w.waitReplies(next);
  assert.deepEqual(await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [reply.id] }), [], "nobody answered the answer");
});

test("an answer from someone else is ignored and logged; the owner's number counts", async () => {
  const ev = await w.owner.post("@agent #ask");
  const { card, text } = await questionOf(ev);
  await answerCard(w.stranger, card, { action: "accept", answer: "Red" });
  await d.waitLog((l) => l.evt === "question.answer_ignored" && l.card === card.id && l.author === w.stranger.npub);
  await w.owner.post("3", { replyTo: text });
  assert.equal(await answerReported(ev), 'question: accept {"question_0":"blue"}');
});

test("no answer within questions.timeout: the agent gets cancel and the plain message says it closed", async () => {
  await d.stop();
  const short = await w.startDaemon(config("5s"));
  try {
    const ev = await w.owner.post("@agent #ask");
    const { text } = await questionOf(ev);
    assert.equal(await answerReported(ev), "question: cancel");
    const [edit] = await w.waitEvents({ kinds: [KIND.edit], authors: [w.agent.pk], "#e": [text.id] }, (e) => e.length > 0);
    assert.match(edit!.content, /Closed: no answer in time/);
    await short.waitLog((l) => l.evt === "question.answered" && l.action === "cancel" && l.by === "timeout");
  } finally {
    await short.stop();
    d = await w.startDaemon(config("5m"));
  }
});

test("!cancel ends a turn that waits for an answer", async () => {
  const ev = await w.owner.post("@agent #ask");
  await questionOf(ev);
  await w.owner.post("!cancel", { replyTo: ev });
  await d.waitLog((l) => l.evt === "turn.end" && l.status === "cancelled" && (l.events as string[]).includes(ev.id));
  await w.waitReaction(ev, "⚠️");
  const next = await w.owner.post("@agent still there?", { replyTo: ev });
  await w.waitReplies(next);
  const replies = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] });
  assert.ok(!replies.some((m) => /question: /.test(m.content)), "the cancelled turn did not go on to answer");
});

test("!cancel as a reply to the agent's question message is the owner's command, not the answer: the turn is cancelled with its 40099", async () => {
  const ev = await w.owner.post("@agent #ask");
  const { text } = await questionOf(ev);
  const cmd = await w.owner.post("!cancel", { replyTo: text });
  const [outcome] = await w.waitEvents({ kinds: [KIND.system], authors: [w.agent.pk], "#e": [cmd.id] }, (e) => e.length > 0);
  assert.ok(outcome, "the command's outcome is published");
  await d.waitLog((l) => l.evt === "turn.end" && l.status === "cancelled" && (l.events as string[]).includes(ev.id));
  await w.waitReaction(ev, "⚠️");
  assert.ok(
    !d.logs.some((l) => l.evt === "question.answered" && JSON.stringify(l).includes("!cancel")),
    "!cancel was not taken as the question's answer",
  );
  const next = await w.owner.post("@agent still there?", { replyTo: ev });
  await w.waitReplies(next);
  const replies = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] });
  assert.ok(!replies.some((m) => /question: /.test(m.content)), "the cancelled turn did not go on to report an answer");
});

test("a question survives a daemon restart: the answer given meanwhile reaches the agent, from the same card", async () => {
  await d.stop();
  const before = await w.startDaemon(config("5m"));
  const ev = await w.owner.post("@agent #ask");
  const { card } = await questionOf(ev);
  await before.stop();
  await answerCard(w.owner, card, { action: "accept", answer: "Red" });
  d = await w.startDaemon(config("5m"));
  assert.equal(await answerReported(ev), 'question: accept {"question_0":"red"}');
  const cards = await w.query({ kinds: [KIND.questionCard], authors: [w.agent.pk], "#e": [ev.id] });
  assert.equal(cards.length, 1, "the turn's second run found its card instead of asking again");
});

test("questions.answered_by: requester: the person who asked answers, the owner's answer is ignored", async () => {
  await d.stop();
  d = await w.startDaemon({
    questions: { timeout: "5m", answered_by: "requester" },
    defaults: { respond_to: "allowlist", allow: [w.teammate.npub] },
  });
  const ev = await w.teammate.post("@agent #ask");
  const { card, text } = await questionOf(ev);
  assert.ok(
    card.tags.some((t) => t[0] === "p" && t[1] === w.teammate.pk),
    "the card is the asker's to answer",
  );
  await answerCard(w.owner, card, { action: "accept", answer: "Red" });
  await d.waitLog((l) => l.evt === "question.answer_ignored" && l.card === card.id && l.author === w.owner.npub);
  await w.teammate.post("2", { replyTo: text });
  assert.equal(await answerReported(ev), 'question: accept {"question_0":"green"}');
});
