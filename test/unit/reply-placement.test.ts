/**
 * Replies where people look (docs/conversations.md "Where replies go"): the shapes of the
 * bridge's answers as Buzz Desktop reads them — the reply marker (and root when nested) and a
 * `p` to the asker; `reply_placement: flat` top-level with a `q` quote instead of the marker;
 * the agent's own send_message replies naming whom they answer; typing refreshed inside
 * Desktop's 8 s.
 */
import { describe, test, mock } from "node:test";
import assert from "node:assert/strict";
import { finalizeEvent, type Event, type EventTemplate } from "nostr-tools";
import { answeredBy, message, replyRefFor, threadRootOf } from "../../src/nostr/events.js";
import { KIND } from "../../src/nostr/kinds.js";
import { createBuzzTools } from "../../src/turn/buzz-tool-handlers.js";
import { TurnSignals } from "../../src/turn/signals.js";
import { matchFilter } from "nostr-tools/filter";
import { Answers } from "../../src/turn/published-answers.js";
import type { Batch } from "../../src/queue/index.js";
import { agent, teammate, CHANNEL, mention, fromWire, captureLogger } from "../../kit/queue-helpers.js";

const eTags = (t: EventTemplate) => t.tags.filter((x) => x[0] === "e");
const pTags = (t: EventTemplate) => t.tags.filter((x) => x[0] === "p").map((x) => x[1]);

describe("reply shapes", () => {
  const top = fromWire(mention(teammate, "@agent do X"));
  const nested = fromWire(
    mention(teammate, "@agent and Y", {
      tags: [
        ["e", top.id, "", "root"],
        ["e", "b".repeat(64), "", "reply"],
      ],
    }),
  );

  test("thread (default): a top-level ask gets one reply-marked e tag, a nested one root and reply", () => {
    const a = message(CHANNEL, "done", { thread: replyRefFor(top), mentions: [teammate.pk] });
    assert.deepEqual(eTags(a), [["e", top.id, "", "reply"]]);
    assert.deepEqual(pTags(a), [teammate.pk]);
    const b = message(CHANNEL, "done", { thread: replyRefFor(nested), mentions: [teammate.pk] });
    assert.deepEqual(eTags(b), [
      ["e", top.id, "", "root"],
      ["e", nested.id, "", "reply"],
    ]);
  });

  test("flat: a top-level ask is answered top-level, quoting it, with the p; an ask inside a thread stays in it", () => {
    const a = message(CHANNEL, "done", { thread: replyRefFor(top, "flat"), mentions: [teammate.pk] });
    assert.equal(a.kind, KIND.message);
    assert.deepEqual(eTags(a), [], "no e tag: Desktop shows it top-level");
    assert.deepEqual(
      a.tags.find((t) => t[0] === "q"),
      ["q", top.id],
    );
    assert.deepEqual(pTags(a), [teammate.pk]);
    const signed = finalizeEvent(a, agent.sk);
    assert.equal(threadRootOf(signed), signed.id, "a root of its own");
    assert.equal(answeredBy(signed), top.id, "a restart still finds what it answers");
    const b = message(CHANNEL, "done", { thread: replyRefFor(nested, "flat") });
    assert.deepEqual(
      eTags(b).map((t) => t[3]),
      ["root", "reply"],
    );
  });

  test("a forum message is answered as a comment in its post's thread, flat or not", () => {
    const post = fromWire(mention(teammate, "@agent a post", { kind: KIND.forumPost }));
    const a = message(CHANNEL, "done", { thread: replyRefFor(post, "flat") });
    assert.equal(a.kind, KIND.forumComment);
    assert.deepEqual(eTags(a), [["e", post.id, "", "reply"]]);
  });
});

describe("the agent's send_message", () => {
  function tools(events: Event[], placement: "thread" | "flat" = "thread") {
    const sent: Event[] = [];
    const handlers = createBuzzTools({
      channel: CHANNEL,
      self: agent.pk,
      placement: () => placement,
      relay: {
        sign: (t) => finalizeEvent(t, agent.sk),
        publish: async (ev) => (sent.push(ev), { status: "accepted" }),
        query: async (filters) => events.filter((e) => (filters[0]!.ids ?? []).includes(e.id)),
      },
      defaultReplyTo: () => events[0]!.id,
    });
    return { handlers, sent };
  }

  test("names the person it answers with a p tag, besides the mentions it asked for", async () => {
    const ask = fromWire(mention(teammate, "@agent do X"));
    const { handlers, sent } = tools([ask]);
    await handlers.sendMessage({ content: "done", mentions: [agent.pk.replace(/^./, "c")] } as never);
    assert.deepEqual(eTags(sent[0]!), [["e", ask.id, "", "reply"]]);
    assert.ok(pTags(sent[0]!).includes(teammate.pk));
    assert.equal(pTags(sent[0]!).filter((p) => p === teammate.pk).length, 1);
  });

  test("a reply to its own message mentions no one for it; flat places it top-level", async () => {
    const own = finalizeEvent(message(CHANNEL, "earlier"), agent.sk);
    const { handlers, sent } = tools([own]);
    await handlers.sendMessage({ content: "more" } as never);
    assert.deepEqual(pTags(sent[0]!), []);
    const ask = fromWire(mention(teammate, "@agent do X"));
    const flat = tools([ask], "flat");
    await flat.handlers.sendMessage({ content: "done" } as never);
    assert.deepEqual(eTags(flat.sent[0]!), []);
    assert.deepEqual(pTags(flat.sent[0]!), [teammate.pk]);
  });
});

test("typing is refreshed inside Buzz Desktop's 8 s while a turn runs", () => {
  mock.timers.enable({ apis: ["setInterval"] });
  try {
    const typing: EventTemplate[] = [];
    const at: number[] = [];
    let now = 0;
    const signals = new TurnSignals(
      { publish: async () => null, signal: (t) => void (t.kind === KIND.typing && typing.push(t) && at.push(now)) },
      { channel: CHANNEL, thread: { root: "a".repeat(64), parent: "a".repeat(64) }, triggers: [], typing: true },
    );
    signals.started();
    for (now = 100; now <= 24_000; now += 100) mock.timers.tick(100);
    // Each shows for 8 s: the next one comes before the last has lapsed, all through the turn.
    const gaps = at.map((t, i) => (at[i + 1] ?? 24_000) - t);
    assert.ok(Math.max(...gaps) < 8000, `gaps between typing events: ${gaps.join(", ")} ms`);
    assert.deepEqual(eTags(typing[0]!), [["e", "a".repeat(64), "", "reply"]]);
    signals.finished(true);
    const after = typing.length;
    mock.timers.tick(10_000);
    assert.equal(typing.length, after, "stops with the turn");
  } finally {
    mock.timers.reset();
  }
});

describe("a flat answer after a restart", () => {
  function answers(onRelay: Event[]) {
    const recorded: string[] = [];
    const published: EventTemplate[] = [];
    const { logger } = captureLogger("info");
    const a = new Answers({
      self: agent.pk,
      relay: { query: async (filters) => onRelay.filter((e) => filters.some((f) => matchFilter(f, e))) },
      out: {
        publish: async (t) => (published.push(t), finalizeEvent(t, agent.sk)),
        signal: () => undefined,
      },
      storedEvent: () => undefined,
      recordReply: (_turn, id) => void recorded.push(id),
      logger,
    });
    return { a, recorded, published };
  }
  const ask = fromWire(mention(teammate, "@agent flat please"));
  const batch = (events: Event[]): Batch =>
    ({
      turnId: 3,
      scope: { key: `${CH}/x`, channel: CH },
      events,
      attempt: 2,
      recovered: true,
      publishedReplyIds: [],
      unansweredJoins: [],
      rotated: false,
    }) as never;
  const CH = CHANNEL;

  test("is found by its q tag: the mention is not answered twice", async () => {
    const flatAnswer = finalizeEvent(message(CH, "done", { thread: replyRefFor(ask, "flat"), mentions: [teammate.pk] }), agent.sk);
    const w = answers([flatAnswer]);
    const left = await w.a.unanswered(batch([ask]), captureLogger("info").logger);
    assert.deepEqual(left.events, []);
    assert.deepEqual(w.recorded, [flatAnswer.id]);
  });

  test("a mention only quoted by a question or a progress note is still open; a failure notice goes top-level", async () => {
    const note = finalizeEvent(message(CH, "working", { thread: replyRefFor(ask, "flat"), extraTags: [["buzz", "progress"]] }), agent.sk);
    const w = answers([note]);
    assert.deepEqual((await w.a.unanswered(batch([ask]), captureLogger("info").logger)).events, [ask]);
    await w.a.postFailure([ask], "boom", CH, "flat");
    assert.equal(w.published.length, 1);
    assert.deepEqual(eTags(w.published[0]!), []);
    assert.deepEqual(pTags(w.published[0]!), [teammate.pk]);
  });
});
