/**
 * src/nostr/events.ts on its own: the thread references a reply carries (NIP-10 `root` and
 * `reply` markers as Buzz builds them), how a thread's root and a reaction's target are read
 * back, and the shapes of the bridge's other events. A wrong marker puts an answer in the
 * wrong thread for every user, so each rule is pinned exactly.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import {
  channelOf,
  isAnswer,
  isForumKind,
  isProgressNote,
  mentionsOf,
  message,
  messageParts,
  presence,
  reaction,
  reactionTarget,
  replyRefFor,
  systemMessage,
  threadRootOf,
  typing,
} from "../../src/nostr/events.js";
import { KIND } from "../../src/nostr/kinds.js";
import { MENTION_CAP } from "../../src/contract/limits.js";
import { MAX_CONTENT_BYTES } from "../../src/nostr/split.js";

const CH = "6f1c2a4e-0000-4000-8000-000000000001";
// A distinct 64-hex id per letter: tag values that are not ids (non-hex) are ignored by the parser.
const id = (c: string) => c.charCodeAt(0).toString(16).padStart(2, "0").repeat(32);
const ev = (tags: string[][], eid = id("a")): Pick<Event, "id" | "tags"> => ({ id: eid, tags });
const nowSec = () => Math.floor(Date.now() / 1000);

test("a reply to a top-level message carries one `e` tag, marked reply (Buzz's shape: no root when it is the parent)", () => {
  const t = message(CH, "hi", { thread: { root: id("r"), parent: id("r") } });
  assert.deepEqual(t.tags, [
    ["h", CH],
    ["e", id("r"), "", "reply"],
  ]);
});

test("a reply inside a thread carries the root first, then the parent, each marked", () => {
  const t = message(CH, "hi", { thread: { root: id("r"), parent: id("p") } });
  assert.deepEqual(t.tags, [
    ["h", CH],
    ["e", id("r"), "", "root"],
    ["e", id("p"), "", "reply"],
  ]);
});

test("a message without a thread has no `e` tag", () => {
  assert.deepEqual(message(CH, "hi").tags, [["h", CH]]);
});

test("threadRootOf: the root marker, else the reply marker, else the event itself; unmarked `e` tags do not count", () => {
  assert.equal(
    threadRootOf(
      ev([
        ["e", id("p"), "", "reply"],
        ["e", id("r"), "", "root"],
      ]),
    ),
    id("r"),
    "root wins wherever it is",
  );
  assert.equal(threadRootOf(ev([["e", id("p"), "", "reply"]])), id("p"));
  assert.equal(
    threadRootOf(
      ev([
        ["e", id("x")],
        ["e", id("y"), ""],
      ]),
    ),
    id("a"),
  );
  assert.equal(threadRootOf(ev([])), id("a"));
  assert.equal(
    threadRootOf(
      ev([
        ["e", "", "", "root"],
        ["e", id("p"), "", "reply"],
      ]),
    ),
    id("p"),
    "an empty root id is no root",
  );
  assert.equal(threadRootOf(ev([["e", "", "", "reply"]])), id("a"), "an empty reply id is no parent");
  assert.equal(threadRootOf(ev([["p", id("r"), "", "root"]])), id("a"), "only `e` tags name a thread");
});

test("replyRefFor: a reply goes into the event's thread with the event as parent", () => {
  assert.deepEqual(replyRefFor(ev([])), { root: id("a"), parent: id("a") }, "a top-level message roots its own thread");
  assert.deepEqual(replyRefFor(ev([["e", id("r"), "", "root"]], id("b"))), { root: id("r"), parent: id("b") });
  // Round trip: the reply's own tags name the same thread.
  const inner = ev(
    [
      ["e", id("r"), "", "root"],
      ["e", id("p"), "", "reply"],
    ],
    id("c"),
  );
  const reply = message(CH, "answer", { thread: replyRefFor(inner) });
  assert.equal(threadRootOf({ id: id("d"), tags: reply.tags }), id("r"));
  assert.equal(reply.tags.find((t) => t[3] === "reply")?.[1], id("c"));
});

test("mentionsOf: `p` and Buzz's `mention` tags, lower-cased, once each, empty ones skipped", () => {
  const pk = "AB".repeat(32);
  assert.deepEqual(
    mentionsOf({
      tags: [["p", pk], ["mention", pk.toLowerCase()], ["mention", id("c")], ["p", ""], ["e", id("d")], ["p"]],
    }),
    [pk.toLowerCase(), id("c")],
  );
  assert.deepEqual(mentionsOf({ tags: [] }), []);
});

test("reactionTarget: the last `e` tag (NIP-25); none without one", () => {
  assert.equal(
    reactionTarget({
      tags: [
        ["e", id("r")],
        ["p", id("x")],
        ["e", id("t")],
      ],
    }),
    id("t"),
  );
  assert.equal(reactionTarget({ tags: [["p", id("x")]] }), undefined);
});

test("channelOf: the `h` tag", () => {
  assert.equal(
    channelOf({
      tags: [
        ["e", id("x")],
        ["h", CH],
      ],
    }),
    CH,
  );
  assert.equal(channelOf({ tags: [] }), undefined);
});

test("message: kind 9, the channel first, mentions once each and at most the Buzz cap, extra tags last, stamped now", () => {
  const many = Array.from({ length: MENTION_CAP + 5 }, (_, i) => i.toString(16).padStart(64, "0"));
  const before = nowSec();
  const t = message(CH, "text", { mentions: [many[0]!, ...many], extraTags: [["buzz", "agent-failure"]] });
  assert.equal(t.kind, KIND.message);
  assert.equal(t.content, "text");
  assert.ok(t.created_at >= before && t.created_at <= nowSec());
  assert.deepEqual(t.tags[0], ["h", CH]);
  const ps = t.tags.filter((x) => x[0] === "p").map((x) => x[1]);
  assert.deepEqual(ps, many.slice(0, MENTION_CAP));
  assert.deepEqual(t.tags.at(-1), ["buzz", "agent-failure"]);
  assert.equal(t.tags.length, 1 + MENTION_CAP + 1);
});

test("messageParts: one part when it fits; longer text in ordered parts, each in the same thread with the mentions", () => {
  const thread = { root: id("r"), parent: id("p") };
  const one = messageParts(CH, "short", { thread, mentions: [id("m")] });
  assert.equal(one.length, 1);
  assert.deepEqual(one[0]!.tags, message(CH, "short", { thread, mentions: [id("m")] }).tags);
  const parts = messageParts(CH, "x".repeat(MAX_CONTENT_BYTES + 10), { thread, mentions: [id("m")] });
  assert.ok(parts.length >= 2, "split");
  for (const p of parts) {
    assert.equal(p.kind, KIND.message);
    assert.deepEqual(
      p.tags.filter((t) => t[0] !== "p"),
      [
        ["h", CH],
        ["e", id("r"), "", "root"],
        ["e", id("p"), "", "reply"],
      ],
    );
    assert.ok(Buffer.byteLength(p.content) <= MAX_CONTENT_BYTES);
  }
});

test("reaction: kind 7 on the target (`e`) to its author (`p`), with the channel's `h` when known", () => {
  const target = { id: id("t"), pubkey: id("b") };
  const r = reaction(target, "✅", CH);
  assert.equal(r.kind, KIND.reaction);
  assert.equal(r.content, "✅");
  assert.deepEqual(r.tags, [
    ["e", id("t")],
    ["p", id("b")],
    ["h", CH],
  ]);
  assert.deepEqual(reaction(target, "👀").tags, [
    ["e", id("t")],
    ["p", id("b")],
  ]);
  assert.equal(reactionTarget(r), id("t"));
});

test("typing: an ephemeral event in the channel, in the thread when given", () => {
  const t = typing(CH, { root: id("r"), parent: id("r") });
  assert.equal(t.kind, KIND.typing);
  assert.equal(t.content, "");
  assert.deepEqual(t.tags, [
    ["h", CH],
    ["e", id("r"), "", "reply"],
  ]);
  assert.deepEqual(typing(CH).tags, [["h", CH]]);
});

test("presence and the 40099 system message", () => {
  const p = presence("away");
  assert.deepEqual([p.kind, p.content, p.tags], [KIND.presence, "away", []]);
  const s = systemMessage(CH, { type: "control.cancel", actor: id("o"), target: id("a"), count: 2 }, { root: id("r"), parent: id("c") });
  assert.equal(s.kind, KIND.system);
  assert.deepEqual(JSON.parse(s.content), { type: "control.cancel", actor: id("o"), target: id("a"), count: 2 });
  assert.deepEqual(s.tags, [
    ["h", CH],
    ["e", id("r"), "", "root"],
    ["e", id("c"), "", "reply"],
  ]);
  assert.deepEqual(systemMessage(CH, { type: "t", actor: "a", target: "b" }).tags, [["h", CH]]);
  const before = nowSec();
  assert.ok(s.created_at <= nowSec() && s.created_at >= before - 1);
});

test("replyRefFor: a reply to a forum post or a forum comment is a comment in the post's thread; to a chat message, not", () => {
  const post = { id: id("f"), tags: [], kind: KIND.forumPost };
  assert.deepEqual(replyRefFor(post), { root: id("f"), parent: id("f"), forum: true });
  const comment = { id: id("c"), tags: [["e", id("f"), "", "root"]], kind: KIND.forumComment };
  assert.deepEqual(replyRefFor(comment), { root: id("f"), parent: id("c"), forum: true });
  assert.deepEqual(replyRefFor({ id: id("m"), tags: [], kind: KIND.message }), { root: id("m"), parent: id("m") }, "no forum flag at all");
  assert.deepEqual(replyRefFor(ev([])), { root: id("a"), parent: id("a") }, "an event of unknown kind is no forum's");
  // What a client sees: the reply to a forum post is published as a comment (45003).
  assert.equal(message(CH, "answer", { thread: replyRefFor(post) }).kind, KIND.forumComment);
  assert.equal(message(CH, "answer", { thread: replyRefFor(comment) }).kind, KIND.forumComment);
});

test("isForumKind: forum posts and forum comments only; a vote or a chat message is not", () => {
  assert.equal(isForumKind(KIND.forumPost), true);
  assert.equal(isForumKind(KIND.forumComment), true);
  assert.equal(isForumKind(KIND.forumVote), false);
  assert.equal(isForumKind(KIND.message), false);
  assert.equal(isForumKind(undefined), false);
});

test("message: forumPost makes a top-level message a forum post, but a reply in a chat thread stays kind 9", () => {
  assert.equal(message(CH, "new topic", { forumPost: true }).kind, KIND.forumPost);
  assert.equal(message(CH, "reply", { forumPost: true, thread: { root: id("r"), parent: id("r") } }).kind, KIND.message);
  assert.equal(message(CH, "reply", { forumPost: true, thread: { root: id("r"), parent: id("p"), forum: true } }).kind, KIND.forumComment);
  assert.equal(message(CH, "reply", { thread: { root: id("r"), parent: id("r"), forum: false } }).kind, KIND.message);
});

test("reactionTarget: an upper-case event id is read back lower-case, as every other id", () => {
  const upper = "AB".repeat(32);
  assert.equal(reactionTarget({ tags: [["e", upper]] }), "ab".repeat(32));
  assert.equal(reactionTarget({ tags: [["e", "not an id"]] }), undefined, "a last `e` tag that is no id names nothing");
});

test("isProgressNote: only the `buzz` `progress` tag marks a progress note, among any other tags", () => {
  assert.equal(
    isProgressNote({
      tags: [
        ["h", CH],
        ["buzz", "progress"],
        ["p", id("u")],
      ],
    }),
    true,
  );
  assert.equal(
    isProgressNote({
      tags: [
        ["h", CH],
        ["buzz", "progress"],
      ],
    }),
    true,
    "not only when it is the only tag",
  );
  assert.equal(isProgressNote({ tags: [] }), false);
  assert.equal(isProgressNote({ tags: [["h", CH]] }), false);
  assert.equal(isProgressNote({ tags: [["buzz", "question"]] }), false, "a question is not a progress note");
  assert.equal(isProgressNote({ tags: [["t", "progress"]] }), false, "another tag's `progress` value does not count");
  assert.equal(isProgressNote({ tags: [["buzz", "agent-failure"]] }), false);
});

test("isAnswer: a plain reply answers; a progress note or a question does not", () => {
  assert.equal(isAnswer(message(CH, "done")), true);
  assert.equal(isAnswer(message(CH, "done", { extraTags: [["buzz", "agent-failure"]] })), true, "another buzz mark is still an answer");
  assert.equal(isAnswer({ tags: [["t", "question"]] }), true, "another tag's `question` value does not count");
  assert.equal(isAnswer(message(CH, "working on it", { extraTags: [["buzz", "progress"]] })), false);
  assert.equal(isAnswer(message(CH, "which branch?", { extraTags: [["buzz", "question"]] })), false);
  assert.equal(
    isAnswer({
      tags: [
        ["h", CH],
        ["buzz", "question"],
        ["p", id("u")],
      ],
    }),
    false,
    "the mark among other tags",
  );
});
