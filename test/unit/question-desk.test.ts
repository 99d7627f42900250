/**
 * The agent's questions to people (turn/questions.ts, docs/conversations.md "Questions back
 * to people"), judged by what the channel shows: the card and the plain message the question
 * becomes, which answers count and which are ignored (and said so, once), what a timeout or a
 * cancelled turn leaves in the thread, a question found again after a restart, and which
 * events the desk takes away from the queue. In process: the relay is a list of signed events
 * answered with NIP-01 filter matching, as in security-owner-commands.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { finalizeEvent, verifyEvent, type Event, type EventTemplate } from "nostr-tools";
import { matchFilter, type Filter } from "nostr-tools/filter";
import { elicitationKey, plainQuestion, QuestionDesk, type AskContext } from "../../src/turn/questions.js";
import { cardAnswer, questionCard, readCard, type CardAnswer, type CardQuestion } from "../../src/nostr/cards.js";
import { KIND } from "../../src/nostr/kinds.js";
import { agent, CHANNEL, captureLogger, owner, stranger, type Person } from "../../kit/queue-helpers.js";
import { waitFor } from "../../kit/wait.js";

const now = () => Math.floor(Date.now() / 1000);

const DEPLOY: CardQuestion = {
  key: "question_0",
  prompt: "Deploy to production?",
  multiSelect: false,
  allowCustom: false,
  options: [{ label: "Yes" }, { label: "No" }],
};
const REGIONS: CardQuestion = {
  key: "question_1",
  header: "Regions",
  prompt: "Where to?",
  multiSelect: true,
  allowCustom: true,
  options: [{ label: "eu", description: "Frankfurt" }, { label: "us" }, { label: "ap" }],
};

function world(o: { shared?: boolean; refuseCards?: boolean; refuseTexts?: boolean; relayDown?: boolean; pollMs?: number } = {}) {
  const relay: Event[] = [];
  const { logger, lines } = captureLogger("debug");
  const signals: EventTemplate[] = [];
  let down = o.relayDown ?? false;
  const publish = async (t: EventTemplate) => {
    if (o.refuseCards && t.kind === KIND.questionCard) return null;
    if (o.refuseTexts && t.kind === KIND.message) return null;
    const ev = finalizeEvent({ ...t, created_at: t.created_at || now() }, agent.sk);
    relay.push(ev);
    return ev;
  };
  const queries: Filter[][] = [];
  const query = async (filters: Filter[]) => {
    queries.push(filters);
    if (down) throw new Error("relay unreachable");
    return relay.filter((e) => filters.some((f) => matchFilter(f, e)));
  };
  const desk = new QuestionDesk({
    self: agent.pk,
    relay: { query },
    out: { publish, signal: (t) => void signals.push(t) },
    verify: (e) => verifyEvent(e),
    logger,
    queue: { shared: o.shared ?? false },
    pollMs: o.pollMs ?? 30,
  });
  const root = post(owner, { kind: KIND.message, content: "@agent ship it", tags: [["h", CHANNEL]] });
  relay.push(root);
  const turn = new AbortController();
  const ctx = (over: Partial<AskContext> = {}): AskContext => ({
    channel: CHANNEL,
    thread: { root: root.id, parent: root.id },
    answerer: owner.pk,
    key: "k1",
    timeoutMs: 600_000,
    signal: turn.signal,
    ...over,
  });
  return {
    relay,
    lines,
    signals,
    desk,
    root,
    turn,
    ctx,
    queries,
    setDown: (v: boolean) => (down = v),
    cards: () => relay.filter((e) => e.kind === KIND.questionCard),
    texts: () => relay.filter((e) => e.kind === KIND.message && e.pubkey === agent.pk),
    /** An event someone posts to the channel, on the relay. */
    put(who: Person, t: Partial<EventTemplate> & { kind: number }) {
      const ev = post(who, t);
      relay.push(ev);
      return ev;
    },
  };
}

function post(who: Person, t: Partial<EventTemplate> & { kind: number }): Event {
  return JSON.parse(JSON.stringify(finalizeEvent({ content: "", tags: [], created_at: now(), ...t }, who.sk))) as Event;
}

const replyTo = (w: ReturnType<typeof world>, parent: Event) => [
  ["h", CHANNEL],
  ["e", w.root.id, "", "root"],
  ["e", parent.id, "", "reply"],
];

/** Asks and waits until the plain messages are on the relay. */
async function asking(w: ReturnType<typeof world>, questions: CardQuestion[], over: Partial<AskContext> = {}) {
  const before = w.texts().length;
  const answers: Promise<CardAnswer[]> = w.desk.ask(questions, w.ctx(over));
  await waitFor(() => w.texts().length === before + questions.length, { what: "the questions posted" });
  return { answers, cards: w.cards().slice(-questions.length), texts: w.texts().slice(-questions.length) };
}

test("a question becomes a card for the answerer and a plain message in the thread that names them and points at the card", async () => {
  const w = world();
  const q = await asking(w, [DEPLOY, REGIONS]);
  assert.equal(q.cards.length, 2);
  for (const [i, card] of q.cards.entries()) {
    assert.deepEqual(readCard(card.content), { questionKey: [DEPLOY, REGIONS][i]!.key, elicitationId: "k1" });
    assert.deepEqual(
      card.tags.filter((t) => t[0] !== "e"),
      [
        ["h", CHANNEL],
        ["p", owner.pk],
      ],
    );
    assert.ok(
      card.tags.some((t) => t[0] === "e" && t[1] === w.root.id),
      "the card is in the thread",
    );
    const text = q.texts[i]!;
    assert.ok(
      text.tags.some((t) => t[0] === "q" && t[1] === card.id),
      "the plain message points at its card",
    );
    assert.ok(text.tags.some((t) => t[0] === "buzz" && t[1] === "question"));
    assert.ok(
      text.tags.some((t) => t[0] === "p" && t[1] === owner.pk),
      "the answerer is mentioned",
    );
    assert.ok(
      text.tags.some((t) => t[0] === "e" && t[1] === w.root.id),
      "in the mention's thread",
    );
  }
  assert.equal(
    q.texts[0]!.content,
    'Question from the agent: Deploy to production?\n1. Yes\n2. No\nReply to this message with the number of your answer; "decline" to skip it, "cancel" to refuse.',
  );
  assert.equal(
    q.texts[1]!.content,
    'Question from the agent: Regions: Where to?\n1. eu — Frankfurt\n2. us\n3. ap\nReply to this message with the numbers of your answers or your own answer; "decline" to skip it, "cancel" to refuse.',
  );
  const asked = w.lines.filter((l) => l.evt === "question.asked");
  assert.deepEqual(
    asked.map((l) => [l.card, l.text, l.question, l.answerer, l.timeout_ms]),
    q.cards.map((c, i) => [c.id, q.texts[i]!.id, [DEPLOY, REGIONS][i]!.key, owner.npub, 600_000]),
  );
  w.turn.abort();
  await q.answers;
});

test("the plain form of a permission question and of one with no options", () => {
  assert.equal(
    plainQuestion(DEPLOY, true),
    'Deploy to production?\n1. Yes\n2. No\nReply to this message with the number of your answer; "decline" to skip it, "cancel" to refuse. Or react 👍 to allow, 👎 to deny.',
  );
  assert.equal(
    plainQuestion({ ...DEPLOY, options: [], prompt: "Which branch?" }, false),
    'Question from the agent: Which branch?\nReply to this message with your answer; "decline" to skip it, "cancel" to refuse.',
  );
  assert.equal(
    plainQuestion({ ...REGIONS, prompt: "Regions: where to?" }, false).split("\n")[0],
    "Question from the agent: Regions: where to?",
    "a header the prompt already starts with is not repeated",
  );
  assert.equal(
    plainQuestion({ ...DEPLOY, allowCustom: true }, false)
      .split("\n")
      .at(-1),
    'Reply to this message with the number of your answer or your own answer; "decline" to skip it, "cancel" to refuse.',
  );
});

test("the answerer's card answer, numbers or words in reply to the plain message: each question its own answer", async () => {
  const w = world();
  const started = Date.now();
  const q = await asking(w, [DEPLOY, REGIONS]);
  w.put(owner, cardAnswer(q.cards[0]!, { action: "accept", answer: "No" }, CHANNEL));
  w.put(owner, { kind: KIND.message, content: "1, 3", tags: replyTo(w, q.texts[1]!) });
  assert.deepEqual(await q.answers, [
    { action: "accept", answer: "No" },
    { action: "accept", answer: ["eu", "ap"] },
  ]);
  const taken = w.lines.filter((l) => l.evt === "question.answered");
  assert.deepEqual(
    taken.map((l) => [l.card, l.action, l.by, l.via]).sort(),
    [
      [q.cards[0]!.id, "accept", owner.npub, "card"],
      [q.cards[1]!.id, "accept", owner.npub, "text"],
    ].sort(),
  );
  const waited = Date.now() - started + 1000; // the card's time is whole seconds
  assert.ok(
    taken.every((l) => typeof l.waited_ms === "number" && l.waited_ms >= 0 && l.waited_ms <= waited),
    "waited_ms is the time since the card",
  );
  assert.deepEqual(w.signals, [], "an answered question is not closed");
});

test("a reply's parent is its reply-marked e tag, else its last e; the first answer in time counts", async () => {
  const w = world();
  const q = await asking(w, [DEPLOY]);
  const t = now();
  // Unmarked e tags (a mention after them): the last e is the parent. A later "1" and an
  // earlier "2", the later with the lower id: the earlier counts, whatever the ids say.
  const unmarked = (content: string, at: number, i: number) =>
    post(owner, {
      kind: KIND.message,
      content,
      created_at: at,
      tags: [
        ["h", CHANNEL],
        ["e", w.root.id],
        ["e", q.cards[0]!.id],
        ["e", q.texts[0]!.id],
        ["p", agent.pk],
        ["client", String(i)],
      ],
    });
  const earlier = unmarked("2", t, 0);
  let later = unmarked("1", t + 1, 0);
  for (let i = 1; later.id > earlier.id; i++) later = unmarked("1", t + 1, i);
  w.relay.push(later, earlier);
  assert.deepEqual(await q.answers, [{ action: "accept", answer: "No" }]);

  const w2 = world();
  const q2 = await asking(w2, [DEPLOY]);
  // Reply-marked to the thread's root (not the question): no answer, whatever the last e says.
  w2.put(owner, {
    kind: KIND.message,
    content: "1",
    tags: [
      ["h", CHANNEL],
      ["e", w2.root.id, "", "reply"],
      ["e", q2.texts[0]!.id],
    ],
  });
  w2.put(owner, { kind: KIND.message, content: "decline", tags: replyTo(w2, q2.texts[0]!) });
  assert.deepEqual(await q2.answers, [{ action: "decline" }]);

  const w3 = world();
  const q3 = await asking(w3, [DEPLOY]);
  // Marked tags in any order (NIP-10): the reply-marked one before the root.
  w3.put(owner, {
    kind: KIND.message,
    content: "no",
    tags: [
      ["h", CHANNEL],
      ["e", q3.texts[0]!.id, "", "reply"],
      ["e", w3.root.id, "", "root"],
    ],
  });
  assert.deepEqual(await q3.answers, [{ action: "accept", answer: "No" }]);
});

test("a permission question takes 👍 and 👎 (and +, -, ✅, ❌) on its plain message; another question does not", async () => {
  for (const [emoji, answer] of [
    ["👍", "Yes"],
    ["+", "Yes"],
    ["✅", "Yes"],
    ["👎", "No"],
    ["-", "No"],
    ["❌", "No"],
  ] as const) {
    const w = world();
    const q = await asking(w, [DEPLOY], { reactions: true });
    // Before the answer: another emoji on the plain message, and a 👍 on the card, not on it.
    w.put(owner, {
      kind: KIND.reaction,
      content: "🎉",
      created_at: now() - 1,
      tags: [
        ["h", CHANNEL],
        ["e", q.texts[0]!.id],
      ],
    });
    w.desk.offer(
      post(owner, {
        kind: KIND.reaction,
        content: "👍",
        created_at: now() - 1,
        tags: [
          ["h", CHANNEL],
          ["e", q.cards[0]!.id],
        ],
      }),
    );
    w.put(owner, {
      kind: KIND.reaction,
      content: ` ${emoji} `,
      tags: [
        ["h", CHANNEL],
        ["e", q.texts[0]!.id],
      ],
    });
    assert.deepEqual(await q.answers, [{ action: "accept", answer }], emoji);
    assert.equal(w.lines.find((l) => l.evt === "question.answered")?.via, "reaction");
  }
  const w = world();
  const q = await asking(w, [DEPLOY]);
  const thumb = w.put(owner, {
    kind: KIND.reaction,
    content: "👍",
    tags: [
      ["h", CHANNEL],
      ["e", q.texts[0]!.id],
    ],
  });
  w.desk.offer(thumb); // the subscription delivers it too
  await waitFor(() => w.queries.length >= 4, { what: "a few polls" });
  assert.equal(w.lines.filter((l) => l.evt === "question.answered").length, 0, "a reaction answers only a permission question");
  assert.ok(!w.queries.at(-1)!.some((f) => f.kinds?.includes(KIND.reaction)), "nor is it asked for");
  w.turn.abort();
  assert.deepEqual(await q.answers, [{ action: "cancel" }]);
});

test("an answer from someone else, with a bad signature, or a control command is ignored and said so once; the agent's own never counts", async () => {
  const w = world();
  const q = await asking(w, [DEPLOY]);
  const theirs = w.put(stranger, { kind: KIND.message, content: "1", tags: replyTo(w, q.texts[0]!) });
  const forged = { ...post(owner, { kind: KIND.message, content: "1", tags: replyTo(w, q.texts[0]!) }), content: "2" };
  w.relay.push(forged);
  const command = w.put(owner, { kind: KIND.message, content: "!status", tags: replyTo(w, q.texts[0]!) });
  w.put(agent, { kind: KIND.message, content: "1", tags: replyTo(w, q.texts[0]!) });
  await waitFor(() => w.queries.length >= 6, { what: "several polls over the same events" });
  const ignored = w.lines.filter((l) => l.evt === "question.answer_ignored");
  assert.deepEqual(
    ignored.map((l) => [l.event, l.reason, l.author, l.card]).sort(),
    [
      [theirs.id, "not-the-answerer", stranger.npub, q.cards[0]!.id],
      [forged.id, "bad-signature", owner.npub, q.cards[0]!.id],
      [command.id, "command", owner.npub, q.cards[0]!.id],
    ].sort(),
  );
  assert.equal(w.lines.filter((l) => l.evt === "question.answered").length, 0);
  w.put(owner, { kind: KIND.message, content: "2", tags: replyTo(w, q.texts[0]!) });
  assert.deepEqual(await q.answers, [{ action: "accept", answer: "No" }]);
});

test("no answer in time: the question is cancelled and its plain message closed, counting from the card's own time", async () => {
  const w = world();
  const started = Date.now();
  const q = await asking(w, [DEPLOY, REGIONS], { timeoutMs: 1500 });
  w.put(owner, { kind: KIND.message, content: "yes", tags: replyTo(w, q.texts[0]!) });
  assert.deepEqual(await q.answers, [{ action: "accept", answer: "Yes" }, { action: "cancel" }]);
  assert.ok(Date.now() - started >= 1500 - 1000, "not before the deadline (the card's time is whole seconds)");
  const cancelled = w.lines.filter((l) => l.evt === "question.answered" && l.action === "cancel");
  assert.deepEqual(
    cancelled.map((l) => [l.card, l.by]),
    [[q.cards[1]!.id, "timeout"]],
  );
  const waited = cancelled[0]!.waited_ms as number;
  assert.ok(waited >= 0 && waited <= Date.now() - started, `waited_ms ${waited} is the time the ask waited`);
  assert.deepEqual(w.signals, [
    {
      kind: KIND.edit,
      created_at: w.signals[0]!.created_at,
      content: `${q.texts[1]!.content}\n\n(Closed: no answer in time.)`,
      tags: [
        ["h", CHANNEL],
        ["e", q.texts[1]!.id],
      ],
    },
  ]);

  // A daemon that is stopping leaves a cancelled question open, never one whose time is up.
  const w2 = world();
  const q2 = await asking(w2, [DEPLOY], { timeoutMs: 1000, closeWhenCancelled: () => false });
  assert.deepEqual(await q2.answers, [{ action: "cancel" }]);
  assert.deepEqual(
    w2.signals.map((e) => e.content),
    [`${q2.texts[0]!.content}\n\n(Closed: no answer in time.)`],
  );
});

test("a cancelled turn's question is closed as no longer needed, unless the daemon is stopping and the turn will ask again", async () => {
  const w = world();
  const q = await asking(w, [DEPLOY]);
  w.turn.abort();
  assert.deepEqual(await q.answers, [{ action: "cancel" }]);
  assert.equal(w.lines.find((l) => l.evt === "question.answered")?.by, "cancel");
  assert.deepEqual(
    w.signals.map((s) => s.content),
    [`${q.texts[0]!.content}\n\n(Closed: no longer needed.)`],
  );

  const w2 = world();
  const q2 = await asking(w2, [DEPLOY], { closeWhenCancelled: () => false });
  w2.turn.abort();
  assert.deepEqual(await q2.answers, [{ action: "cancel" }]);
  assert.deepEqual(w2.signals, [], "left open for the turn's run after the restart");
});

test("asked again after a restart, the question is found in the thread with an answer given meanwhile: no second card", async () => {
  const w = world();
  const first = await asking(w, [DEPLOY, REGIONS]);
  const stopping = () => false;
  w.turn.abort();
  await first.answers;
  w.put(owner, { kind: KIND.message, content: "2", tags: replyTo(w, first.texts[0]!) });
  const again = new AbortController();
  const pending = w.desk.ask([DEPLOY, REGIONS], w.ctx({ signal: again.signal, closeWhenCancelled: stopping }));
  await waitFor(() => w.lines.some((l) => l.evt === "question.answered" && l.card === first.cards[0]!.id && l.via === "text"), {
    what: "the answer given meanwhile found",
  });
  assert.equal(w.cards().length, 2, "no second card");
  assert.equal(w.texts().length, 2, "no second plain message");
  // The second question has no answer yet: its wait goes on until the turn is cancelled.
  again.abort();
  assert.deepEqual(await pending, [{ action: "accept", answer: "No" }, { action: "cancel" }]);

  const w2 = world();
  const q = await asking(w2, [DEPLOY], { closeWhenCancelled: stopping });
  w2.turn.abort();
  await q.answers;
  w2.put(owner, cardAnswer(q.cards[0]!, { action: "decline" }, CHANNEL));
  assert.deepEqual(await w2.desk.ask([DEPLOY], w2.ctx({ signal: new AbortController().signal })), [{ action: "decline" }]);
  assert.equal(w2.cards().length, 1);
  assert.equal(w2.lines.filter((l) => l.evt === "question.asked").length, 1, "asked once");

  // A different turn (another key) asks anew.
  const w3 = world();
  const q3 = await asking(w3, [DEPLOY]);
  w3.turn.abort();
  await q3.answers;
  const other = new AbortController();
  const anew = w3.desk.ask([DEPLOY], w3.ctx({ key: "k2", signal: other.signal }));
  await waitFor(() => w3.cards().length === 2, { what: "a card for the other turn's question" });
  other.abort();
  await anew;
});

test("after a restart each question found keeps its own plain message", { timeout: 30_000 }, async () => {
  const w = world();
  const first = await asking(w, [DEPLOY, REGIONS], { closeWhenCancelled: () => false });
  w.turn.abort();
  await first.answers;
  const again = w.desk.ask([DEPLOY, REGIONS], w.ctx({ signal: new AbortController().signal }));
  w.put(owner, { kind: KIND.message, content: "3", tags: replyTo(w, first.texts[1]!) });
  w.put(owner, cardAnswer(first.cards[0]!, { action: "decline" }, CHANNEL));
  assert.deepEqual(await again, [{ action: "decline" }, { action: "accept", answer: ["ap"] }]);
  assert.equal(w.cards().length, 2, "no second card");
});

/** A card of this identity's from an earlier run of the turn `key`, `age` seconds old. */
function earlierCard(w: ReturnType<typeof world>, q: CardQuestion, age: number): Event {
  const ev = post(agent, { ...questionCard(CHANNEL, q, "k1", [["e", w.root.id, "", "root"]], owner.pk), created_at: now() - age });
  w.relay.push(ev);
  return ev;
}

test("the time to answer counts from the first card, one found after a restart included", { timeout: 30_000 }, async () => {
  const w = world();
  earlierCard(w, DEPLOY, 59);
  const answers = await w.desk.ask([DEPLOY, REGIONS], w.ctx({ timeoutMs: 60_000 }));
  assert.deepEqual(answers, [{ action: "cancel" }, { action: "cancel" }]);
  assert.deepEqual(
    w.lines.filter((l) => l.evt === "question.answered").map((l) => l.by),
    ["timeout", "timeout"],
  );
  assert.equal(w.cards().length, 2, "the found card and the new one");
});

test("only this identity's cards and plain messages are its questions: another's card with the same key, or a message pointing at our card, is not", {
  timeout: 30_000,
}, async () => {
  const w = world();
  const impostor = post(stranger, { ...questionCard(CHANNEL, DEPLOY, "k1", [["e", w.root.id, "", "root"]], owner.pk) });
  w.relay.push(impostor);
  const pending = w.desk.ask([DEPLOY], w.ctx());
  const mine = await waitFor(() => w.cards().find((c) => c.pubkey === agent.pk), { what: "the desk's own card" });
  w.put(owner, cardAnswer(mine, { action: "accept", answer: "Yes" }, CHANNEL));
  assert.deepEqual(await pending, [{ action: "accept", answer: "Yes" }]);

  // Our card from an earlier run whose plain message never made it; someone else's message
  // points at the card as if it were that message.
  const w2 = world();
  const card = earlierCard(w2, DEPLOY, 58);
  const fake = post(stranger, {
    kind: KIND.message,
    content: "Question from the agent: Deploy to production?",
    tags: [
      ["h", CHANNEL],
      ["e", w2.root.id, "", "root"],
      ["q", card.id],
      ["buzz", "question"],
    ],
  });
  w2.relay.push(fake);
  const waiting = w2.desk.ask([DEPLOY], w2.ctx({ timeoutMs: 60_000 }));
  await waitFor(() => w2.queries.length >= 3, { what: "the first poll" });
  assert.deepEqual(w2.queries.at(-1), [{ kinds: [KIND.questionAnswer], "#e": [card.id] }], "only the card's answers are asked for");
  w2.put(owner, { kind: KIND.message, content: "1", tags: replyTo(w2, fake) });
  // A reply to the card itself is no card answer; with no plain message, nothing else answers.
  w2.desk.offer(post(owner, { kind: KIND.message, content: "1", tags: replyTo(w2, card) }));
  assert.deepEqual(await waiting, [{ action: "cancel" }]);
  assert.deepEqual(w2.signals, [], "nothing to close: the question has no plain message of ours");
  assert.equal(w2.lines.find((l) => l.evt === "question.answered")?.by, "timeout");
});

test("a relay that cannot be read: the question is posted anyway and waits; a card the relay refuses fails the ask", async () => {
  const w = world({ relayDown: true });
  const q = await asking(w, [DEPLOY]);
  w.put(owner, { kind: KIND.message, content: "1", tags: replyTo(w, q.texts[0]!) });
  await waitFor(() => w.queries.length >= 4, { what: "polls that fail" });
  w.setDown(false);
  assert.deepEqual(await q.answers, [{ action: "accept", answer: "Yes" }]);

  const refused = world({ refuseCards: true });
  await assert.rejects(refused.desk.ask([DEPLOY], refused.ctx()), /the relay refused the question card/);
});

test("offer: an answer to a waiting question is taken from the queue and wakes the wait at once", async () => {
  const w = world();
  const q = await asking(w, [DEPLOY]);
  // Not on the relay: only the subscription delivers it, and the poll would never see it.
  const reply = post(owner, { kind: KIND.message, content: "1", tags: replyTo(w, q.texts[0]!) });
  assert.equal(w.desk.offer(reply), true);
  assert.deepEqual(await q.answers, [{ action: "accept", answer: "Yes" }]);
  assert.equal(w.desk.offer(post(owner, { kind: KIND.message, content: "1", tags: replyTo(w, q.texts[0]!) })), false, "no longer waiting");
  assert.equal(w.desk.offer(post(owner, { kind: KIND.profile, content: "{}", tags: [["e", q.cards[0]!.id]] })), false, "not answer-shaped");
});

test("offer, while a question waits: every kind an answer comes as is taken, and nothing else, nor a message that only quotes the card", async () => {
  const w = world();
  const q = await asking(w, [DEPLOY, REGIONS], { reactions: true });
  const offered = (t: Partial<EventTemplate> & { kind: number }) => w.desk.offer(post(owner, t));
  assert.equal(offered({ kind: KIND.profile, content: "{}", tags: [["e", q.cards[0]!.id]] }), false, "not answer-shaped");
  assert.equal(
    offered({
      kind: KIND.message,
      content: "@agent what did you ask here?",
      tags: [
        ["h", CHANNEL],
        ["e", w.root.id, "", "root"],
        ["q", q.cards[0]!.id],
      ],
    }),
    false,
    "a message quoting the card is a request of its own",
  );
  const party = {
    kind: KIND.reaction,
    content: "🎉",
    tags: [
      ["h", CHANNEL],
      ["e", q.texts[0]!.id],
    ],
  };
  assert.equal(offered(party), true, "a reaction on the plain message");
  assert.equal(offered({ kind: KIND.forumComment, content: "3", tags: replyTo(w, q.texts[1]!) }), true, "a forum comment");
  assert.equal(offered(cardAnswer(q.cards[0]!, { action: "decline" }, CHANNEL)), true, "a card answer");
  assert.deepEqual(await q.answers, [{ action: "decline" }, { action: "accept", answer: ["ap"] }]);
});

test("the wait sleeps until an answer arrives or the turn is cancelled, not until the next poll", { timeout: 30_000 }, async () => {
  const w = world({ pollMs: 3_600_000 });
  const q = await asking(w, [DEPLOY]);
  assert.equal(w.desk.offer(post(owner, { kind: KIND.message, content: "1", tags: replyTo(w, q.texts[0]!) })), true);
  assert.deepEqual(await q.answers, [{ action: "accept", answer: "Yes" }]);

  const w2 = world({ pollMs: 3_600_000 });
  const q2 = await asking(w2, [DEPLOY]);
  w2.turn.abort();
  assert.deepEqual(await q2.answers, [{ action: "cancel" }]);
});

test("two questions: an answer on one card answers that question only, and each poll asks only for the questions still open", async () => {
  const w = world();
  const q = await asking(w, [DEPLOY, REGIONS]);
  w.put(owner, cardAnswer(q.cards[1]!, { action: "accept", answer: ["us"] }, CHANNEL));
  await waitFor(() => w.lines.some((l) => l.evt === "question.answered"), { what: "the card answer read" });
  assert.equal(w.lines.find((l) => l.evt === "question.answered")?.card, q.cards[1]!.id);
  const polls = w.queries.length;
  await waitFor(() => w.queries.length > polls, { what: "the next poll" });
  assert.deepEqual(w.queries.at(-1), [
    { kinds: [KIND.questionAnswer], "#e": [q.cards[0]!.id] },
    { kinds: [KIND.message, KIND.forumPost, KIND.forumComment], "#e": [q.texts[0]!.id] },
  ]);
  w.put(owner, { kind: KIND.message, content: "1", tags: replyTo(w, q.texts[0]!) });
  assert.deepEqual(await q.answers, [
    { action: "accept", answer: "Yes" },
    { action: "accept", answer: ["us"] },
  ]);
});

test("offer, in a fleet: a reply to a question another daemon waits on is not queued here, while the question may be answered", () => {
  const w = world({ shared: true });
  const question = post(agent, {
    kind: KIND.message,
    content: "Question from the agent: ?",
    tags: [
      ["h", CHANNEL],
      ["buzz", "question"],
    ],
  });
  const plain = post(agent, { kind: KIND.message, content: "done", tags: [["h", CHANNEL]] });
  // The agent's "still working" note, and a message of its with the hashtag #question: they ask nothing.
  const note = post(agent, {
    kind: KIND.message,
    content: "still working",
    tags: [
      ["h", CHANNEL],
      ["buzz", "progress"],
    ],
  });
  const hashtag = post(agent, {
    kind: KIND.message,
    content: "#question of the day",
    tags: [
      ["h", CHANNEL],
      ["t", "question"],
    ],
  });
  for (const ev of [note, hashtag]) w.desk.offer(ev, { timeoutMs: 60_000 });
  assert.equal(w.desk.offer(question, { timeoutMs: 60_000 }), false, "the agent's own message is never an answer");
  w.desk.offer(plain, { timeoutMs: 60_000 });
  const reply = (to: Event, kind: number = KIND.message) =>
    post(owner, {
      kind,
      content: "1",
      tags: [
        ["h", CHANNEL],
        ["e", to.id, "", "reply"],
      ],
    });
  assert.equal(w.desk.offer(reply(question)), true);
  assert.equal(w.desk.offer(reply(plain)), false, "a reply to a message that asked nothing");
  assert.equal(w.desk.offer(reply(note)), false, "a reply to the progress note");
  assert.equal(w.desk.offer(reply(hashtag)), false, "a reply to a message tagged #question");
  assert.equal(w.desk.offer(reply(question, KIND.questionAnswer)), false, "a card answer is read from the relay by the daemon that waits");
  const expired = post(agent, {
    kind: KIND.message,
    content: "Q?",
    created_at: now() - 120,
    tags: [
      ["h", CHANNEL],
      ["buzz", "question"],
    ],
  });
  w.desk.offer(expired, { timeoutMs: 60_000 });
  assert.equal(w.desk.offer(reply(expired)), false, "past its time, a reply is a new request");
  const noTimeout = post(agent, {
    kind: KIND.message,
    content: "Q?",
    created_at: now() - 1,
    tags: [
      ["h", CHANNEL],
      ["buzz", "question"],
    ],
  });
  w.desk.offer(noTimeout);
  assert.equal(w.desk.offer(reply(noTimeout)), false, "with no timeout given, the question is over at its own time");
  assert.equal(w.desk.offer(post(owner, { kind: KIND.message, content: "hi", tags: [["h", CHANNEL]] })), false, "not a reply");

  const single = world({ shared: false });
  single.desk.offer(question, { timeoutMs: 60_000 });
  assert.equal(single.desk.offer(reply(question)), false, "one daemon: every question of ours waits here or nowhere");
});

test("a question's key is the same for the same turn, question and form, and differs otherwise", () => {
  const k = elicitationKey("ev1", 0, { a: 1 });
  assert.match(k, /^[0-9a-f]{32}$/);
  assert.equal(elicitationKey("ev1", 0, { a: 1 }), k);
  assert.notEqual(elicitationKey("ev2", 0, { a: 1 }), k);
  assert.notEqual(elicitationKey("ev1", 1, { a: 1 }), k);
  assert.notEqual(elicitationKey("ev1", 0, { a: 2 }), k);
});
