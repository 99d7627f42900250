/**
 * src/turn/published-answers.ts in process: what a turn that ran before still has to answer (asked of
 * the relay, since a reply can land without being recorded), how what a turn publishes is
 * recorded, and the failure notices of a turn that failed for good — one per thread still
 * without an answer. The relay and the publisher are small in-process stand-ins.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { finalizeEvent, generateSecretKey, getPublicKey, type Event, type EventTemplate, type Filter } from "nostr-tools";
import { Answers, anchorOf } from "../../src/turn/published-answers.js";
import type { Batch } from "../../src/queue/index.js";
import { KIND } from "../../src/nostr/kinds.js";
import { message, replyRefFor, threadRootOf } from "../../src/nostr/events.js";
import { captureLogger } from "../../kit/queue-helpers.js";

const CH = "4b1d0c3e-0000-4000-8000-000000000002";
const agentSk = generateSecretKey();
const self = getPublicKey(agentSk);
const asker = generateSecretKey();
let clock = 1000;
const post = (text: string, o: { replyTo?: Event; who?: Uint8Array } = {}): Event =>
  finalizeEvent(message(CH, text, { thread: o.replyTo ? replyRefFor(o.replyTo) : undefined, mentions: [self] }), o.who ?? asker) as Event;
/** The agent's reply to `to` (signed by the agent). */
const answer = (to: Event, who = agentSk): Event =>
  finalizeEvent({ ...message(CH, "answer", { thread: replyRefFor(to) }), created_at: ++clock }, who) as Event;
const edit = (target: Event, text: string): Event =>
  finalizeEvent(
    {
      kind: KIND.edit,
      created_at: ++clock,
      content: text,
      tags: [
        ["h", CH],
        ["e", target.id],
      ],
    },
    asker,
  ) as Event;

function world(o: { onRelay?: Event[]; relayFails?: boolean; stored?: Event[]; beforePublish?: boolean } = {}) {
  const recorded: Array<[number, string]> = [];
  const before: Array<[number, string]> = [];
  const published: EventTemplate[] = [];
  const signals: EventTemplate[] = [];
  const queries: Filter[][] = [];
  const { logger, lines } = captureLogger("info");
  const stored = new Map((o.stored ?? []).map((e) => [e.id, e]));
  const answers = new Answers({
    self,
    relay: {
      query: async (f: Filter[]) => {
        queries.push(f);
        if (o.relayFails) throw new Error("relay down");
        return (o.onRelay ?? []).filter((e) => (f[0]!["#e"] ?? []).some((id) => e.tags.some((t) => t[0] === "e" && t[1] === id)));
      },
    },
    out: {
      publish: async (t: EventTemplate, po?: { beforePublish?(ev: Event): Promise<void> }) => {
        const ev = finalizeEvent(t, agentSk) as Event;
        await po?.beforePublish?.(ev);
        published.push(t);
        return ev;
      },
      signal: (t: EventTemplate) => void signals.push(t),
    },
    storedEvent: (id) => stored.get(id),
    recordReply: (turnId, id) => void recorded.push([turnId, id]),
    recordBeforePublish: o.beforePublish ? async (turnId, id) => void before.push([turnId, id]) : undefined,
    logger,
  });
  return { answers, recorded, before, published, signals, queries, lines, logger };
}

const batch = (events: Event[], over: Partial<Batch> = {}): Batch => ({
  turnId: 7,
  scope: { key: `${CH}/${threadRootOf(events[0]!)}`, channel: CH, thread: threadRootOf(events[0]!) } as Batch["scope"],
  events,
  attempt: 1,
  recovered: false,
  publishedReplyIds: [],
  unansweredJoins: [],
  rotated: false,
  ...over,
});

describe("anchorOf", () => {
  test("the newest message; for an edit, the message it edits (so the answer lands in that thread)", () => {
    const a = post("first");
    const b = post("second");
    assert.equal(anchorOf([a, b], () => undefined).id, b.id);
    const e = edit(a, "first, corrected");
    assert.equal(anchorOf([b, e], (id) => (id === a.id ? a : undefined)).id, a.id);
    assert.equal(anchorOf([e], () => undefined).id, e.id, "an edit whose target is unknown anchors on itself");
  });

  test("a reply in a thread anchors on itself, not on the thread's root the queue also holds", () => {
    const root = post("root question");
    const reply = post("follow-up", { replyTo: root });
    assert.equal(anchorOf([reply], (id) => (id === root.id ? root : undefined)).id, reply.id);
  });
});

describe("recording", () => {
  test("recorded(): each new id is recorded once for its turn", () => {
    const w = world();
    const set = w.answers.recorded(3);
    set.add("x").add("y").add("x");
    assert.deepEqual(w.recorded, [
      [3, "x"],
      [3, "y"],
    ]);
    assert.deepEqual([...set], ["x", "y"]);
  });

  test("publisherFor(): the plain publisher, or (fleet) one that records a reply's id before it is sent", async () => {
    const plain = world();
    const out = plain.answers.publisherFor(1);
    await out.publish(message(CH, "hi"));
    assert.equal(plain.published.length, 1);

    const fleet = world({ beforePublish: true });
    const fleetOut = fleet.answers.publisherFor(9);
    const ev = await fleetOut.publish(message(CH, "hi"));
    assert.deepEqual(fleet.before, [[9, ev!.id]], "the signed id is recorded before the publish");
    assert.equal(fleet.published.length, 1);
    fleetOut.signal(message(CH, "typing"));
    assert.equal(fleet.signals.length, 1, "signals pass straight through");
  });
});

describe("unanswered: what a turn still has to answer", () => {
  test("a first attempt that published nothing runs as it is, without asking the relay", async () => {
    const w = world({ onRelay: [] });
    const b = batch([post("hello")]);
    assert.equal(await w.answers.unanswered(b, w.logger), b);
    assert.equal(w.queries.length, 0);
  });

  test("a retry asks the relay: a mention with an agent reply is answered (and its reply recorded); the rest run again", async () => {
    const a = post("one");
    const b = post("two");
    const reply = answer(a);
    const w = world({ onRelay: [reply] });
    const out = await w.answers.unanswered(batch([a, b], { attempt: 2 }), w.logger);
    assert.deepEqual(
      out.events.map((e) => e.id),
      [b.id],
    );
    assert.deepEqual(out.publishedReplyIds, [reply.id]);
    assert.deepEqual(w.recorded, [[7, reply.id]]);
    assert.deepEqual(w.queries[0]![0]!.authors, [self]);
    assert.deepEqual(
      w.queries[0]![0]!.kinds,
      [KIND.message, KIND.forumPost, KIND.forumComment],
      "a reply may be a chat message or, in a forum, a comment",
    );
    const line = w.lines.find((l) => l.evt === "turn.already_answered");
    assert.deepEqual([line?.answered, line?.remaining], [1, 1]);
  });

  test("within one thread, a reply answers its parent and every earlier message of that thread", async () => {
    const root = post("root question");
    const follow = post("follow-up", { replyTo: root });
    const later = post("a later one", { replyTo: root });
    const other = post("another thread");
    const w = world({ onRelay: [answer(follow)] });
    const out = await w.answers.unanswered(batch([root, follow, later, other], { recovered: true }), w.logger);
    assert.deepEqual(
      out.events.map((e) => e.content),
      ["a later one", "another thread"],
    );
  });

  test("only the agent's own replies count; someone else's answer does not", async () => {
    const a = post("one");
    const w = world({ onRelay: [answer(a, generateSecretKey())] });
    const b = batch([a], { attempt: 2 });
    const out = await w.answers.unanswered(b, w.logger);
    assert.deepEqual(out.events, [a]);
    assert.deepEqual(w.recorded, []);
  });

  test("every mention answered: nothing left to run", async () => {
    const a = post("one");
    const w = world({ onRelay: [answer(a)] });
    const out = await w.answers.unanswered(batch([a], { attempt: 3 }), w.logger);
    assert.deepEqual(out.events, []);
    assert.ok(!w.lines.some((l) => l.evt === "turn.already_answered"), "nothing remains: no line about the rest");
  });

  test("the relay cannot be asked: the store decides — a recorded reply means answered, none means run again", async () => {
    const a = post("one");
    const w = world({ relayFails: true });
    assert.deepEqual((await w.answers.unanswered(batch([a], { attempt: 2, publishedReplyIds: ["r1"] }), w.logger)).events, []);
    assert.deepEqual((await w.answers.unanswered(batch([a], { attempt: 2 }), w.logger)).events, [a]);
    assert.ok(w.lines.some((l) => l.evt === "turn.replies_unknown"));
  });

  test("a recorded reply and no answer on the relay: the store's record stands (the turn is answered)", async () => {
    const a = post("one");
    const w = world({ onRelay: [] });
    assert.deepEqual((await w.answers.unanswered(batch([a], { publishedReplyIds: ["r1"] }), w.logger)).events, []);
  });

  test("messages steered in after the turn's reply, before a restart, run on their own; what was published stays", async () => {
    const a = post("one");
    const joined = post("also this", { replyTo: a });
    const w = world({ onRelay: [] });
    const out = await w.answers.unanswered(
      batch([a, joined], { recovered: true, publishedReplyIds: ["r1"], unansweredJoins: [joined] }),
      w.logger,
    );
    assert.deepEqual(out.events, [joined]);
    assert.deepEqual(out.publishedReplyIds, []);
    assert.ok(w.lines.some((l) => l.evt === "turn.resumed"));
  });

  test("a recorded reply, nothing steered in, no answer on the relay: the turn is answered and keeps its recorded reply", async () => {
    const a = post("one");
    const w = world({ onRelay: [] });
    const out = await w.answers.unanswered(batch([a], { attempt: 2, publishedReplyIds: ["r1"] }), w.logger);
    assert.deepEqual([out.events, out.publishedReplyIds], [[], ["r1"]]);
    assert.ok(!w.lines.some((l) => l.evt === "turn.resumed"), "nothing was steered in: no resumed line");
  });

  test("messages steered into a turn that had not replied yet: the whole turn runs again, not only those", async () => {
    const a = post("one");
    const joined = post("also this", { replyTo: a });
    const w = world({ onRelay: [] });
    const out = await w.answers.unanswered(batch([a, joined], { attempt: 2, unansweredJoins: [joined] }), w.logger);
    assert.deepEqual(
      out.events.map((e) => e.id),
      [a.id, joined.id],
    );
    assert.ok(!w.lines.some((l) => l.evt === "turn.resumed"));
  });

  test("the resumed line names the turn's recorded replies and the steered-in messages that still need an answer", async () => {
    const a = post("one");
    const joined = post("also this", { replyTo: a });
    const w = world({ onRelay: [] });
    await w.answers.unanswered(batch([a, joined], { recovered: true, publishedReplyIds: ["r1"], unansweredJoins: [joined] }), w.logger);
    const line = w.lines.find((l) => l.evt === "turn.resumed");
    assert.deepEqual([line?.replies, line?.events], [["r1"], [joined.id]]);
  });

  test("a reply marked only with its thread's root (NIP-10, a direct reply to the root) answers the root", async () => {
    const a = post("one");
    const b = post("two");
    const reply = finalizeEvent(
      {
        kind: KIND.message,
        created_at: ++clock,
        content: "answer",
        tags: [
          ["h", CH],
          ["e", a.id, "", "root"],
        ],
      },
      agentSk,
    ) as Event;
    const w = world({ onRelay: [reply] });
    const out = await w.answers.unanswered(batch([a, b], { attempt: 2 }), w.logger);
    assert.deepEqual(
      out.events.map((e) => e.id),
      [b.id],
    );
    assert.deepEqual(w.recorded, [[7, reply.id]]);
  });

  test("an agent message that only refers to a mention (an unmarked e tag) does not answer it", async () => {
    const a = post("one");
    const b = post("two");
    const quote = finalizeEvent(
      {
        kind: KIND.message,
        created_at: ++clock,
        content: "see that one",
        tags: [
          ["h", CH],
          ["e", b.id],
        ],
      },
      agentSk,
    ) as Event;
    const w = world({ onRelay: [quote] });
    const out = await w.answers.unanswered(batch([a, b], { attempt: 2 }), w.logger);
    assert.deepEqual(
      out.events.map((e) => e.id),
      [a.id, b.id],
    );
    assert.deepEqual(w.recorded, []);
  });

  test("an agent reply to a later message of the thread, not in the turn, answers none of the turn's mentions", async () => {
    const root = post("root question");
    const later = post("asked later, in another turn", { replyTo: root });
    const w = world({ onRelay: [answer(later)] });
    const out = await w.answers.unanswered(batch([root], { attempt: 2 }), w.logger);
    assert.deepEqual(
      out.events.map((e) => e.id),
      [root.id],
    );
    assert.deepEqual(w.recorded, []);
  });

  test("an edit is answered under the message it edits: a reply there counts for it", async () => {
    const a = post("one");
    const e = edit(a, "one, corrected");
    const w = world({ onRelay: [answer(a)], stored: [a] });
    const out = await w.answers.unanswered(batch([e], { attempt: 2 }), w.logger);
    assert.deepEqual(out.events, []);
    assert.deepEqual(w.queries[0]![0]!["#e"], [a.id]);
  });
});

describe("postFailure: the notices of a turn that failed for good", () => {
  test("one notice per thread without an answer, under its last message, naming its askers; ⚠️ on the mentions", async () => {
    const bob = generateSecretKey();
    const t1 = post("first thread");
    const t1b = post("more in it", { replyTo: t1, who: bob });
    const t2 = post("second thread");
    const answered = post("third thread");
    const w = world({ onRelay: [answer(answered)] });
    await w.answers.postFailure([t1, t2, t1b, answered], "the agent crashed", CH);
    assert.equal(w.published.length, 2, "threads 1 and 2; the answered thread gets nothing");
    const [n1, n2] = w.published;
    assert.equal(n1!.content, "Sorry, I could not answer this: the agent crashed.");
    assert.deepEqual(
      n1!.tags.filter((t) => t[0] === "e"),
      [
        ["e", t1.id, "", "root"],
        ["e", t1b.id, "", "reply"],
      ],
    );
    assert.deepEqual(
      n1!.tags.filter((t) => t[0] === "p").map((t) => t[1]),
      [getPublicKey(asker), getPublicKey(bob)],
    );
    assert.ok(n1!.tags.some((t) => t[0] === "buzz" && t[1] === "agent-failure"));
    assert.deepEqual(
      n2!.tags.filter((t) => t[0] === "e"),
      [["e", t2.id, "", "reply"]],
    );
    const warned = w.signals.filter((s) => s.kind === KIND.reaction && s.content === "⚠️").map((s) => s.tags[0]![1]);
    assert.deepEqual(warned, [t1.id, t2.id, t1b.id, answered.id]);
  });

  test("more threads than ten: one notice under the last message, naming everyone", async () => {
    const evs = Array.from({ length: 11 }, (_, i) => post(`thread ${i}`, { who: generateSecretKey() }));
    const w = world({ onRelay: [] });
    await w.answers.postFailure(evs, "boom", CH);
    assert.equal(w.published.length, 1);
    assert.equal(w.published[0]!.tags.find((t) => t[3] === "reply")?.[1], evs.at(-1)!.id);
    assert.equal(w.published[0]!.tags.filter((t) => t[0] === "p").length, 11);
    assert.equal(w.signals.length, 5, "⚠️ on the newest five");
  });

  test("ten threads still get a notice each", async () => {
    const evs = Array.from({ length: 10 }, (_, i) => post(`thread ${i}`));
    const w = world({ onRelay: [] });
    await w.answers.postFailure(evs, "boom", CH);
    assert.equal(w.published.length, 10);
  });

  test("the relay cannot be asked: every thread gets its notice, and the warning names the channel", async () => {
    const a = post("a");
    const w = world({ relayFails: true });
    await w.answers.postFailure([a], "boom", CH);
    assert.equal(w.published.length, 1);
    const warned = w.lines.filter((l) => l.evt === "turn.replies_unknown");
    assert.deepEqual(
      warned.map((l) => [l.channel, l.err]),
      [[CH, "relay down"]],
    );
  });

  test("nothing failed: nothing posted", async () => {
    const w = world();
    await w.answers.postFailure([], "boom", CH);
    assert.deepEqual([w.published, w.signals, w.queries], [[], [], []]);
  });

  test("markFailed: ⚠️ on the newest five mentions, in the channel", () => {
    const evs = Array.from({ length: 7 }, (_, i) => post(`m${i}`));
    const w = world();
    w.answers.markFailed(evs, CH);
    assert.deepEqual(
      w.signals.map((s) => [s.content, s.tags[0]![1], s.tags.find((t) => t[0] === "h")?.[1]]),
      evs.slice(-5).map((e) => ["⚠️", e.id, CH]),
    );
  });
});
