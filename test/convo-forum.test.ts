/**
 * Forum channels (Buzz channel type `forum`): a mention in a post or in a comment of its
 * thread is answered with a comment in that post's thread, with the thread as history; once
 * the agent is in a post's thread, a comment without a mention is answered there too.
 * End to end through the daemon subprocess, the demo agent and the dev relay.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { World } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { threadRootOf } from "../src/nostr/events.js";

let w: World;

before(async () => {
  w = await World.create({ channelName: "design-forum", about: "Proposals and reviews", type: "forum" });
  await w.startDaemon();
});
after(() => w.close());

const comments = (post: { id: string }, n = 1) =>
  w.waitEvents({ kinds: [KIND.forumComment], authors: [w.agent.pk], "#e": [post.id] }, (e) => e.length >= n);

test("a mention in a forum post is answered with a comment in the post's thread", async () => {
  const post = await w.owner.post("@agent what do you think of this proposal?", { kind: KIND.forumPost });
  const [reply] = await comments(post);
  assert.equal(reply!.kind, KIND.forumComment);
  assert.equal(threadRootOf(reply!), post.id);
  assert.match(reply!.content, /design-forum/);
  assert.deepEqual(await w.query({ kinds: [KIND.message], authors: [w.agent.pk] }), [], "no chat message anywhere");
});

test("a mention in a comment is answered in the same post's thread, with the thread as history", async () => {
  const post = await w.owner.post("Proposal: move CI to the new runners", { kind: KIND.forumPost, mention: false });
  const comment = await w.teammate.post("I like it", { replyTo: post, mention: false });
  assert.equal(comment.kind, KIND.forumComment, "the fixture comments on a post");
  const ask = await w.owner.post("@agent #history summarise the thread", { replyTo: comment });
  const [reply] = await comments(ask);
  assert.equal(reply!.kind, KIND.forumComment);
  assert.equal(threadRootOf(reply!), post.id, "in the post's thread");
  assert.match(reply!.content, /history: History: 2 earlier messages/, "the post and the first comment as history");
});

test("thread participation in a forum: a comment without a mention, in a post the agent answered, gets one comment back", async () => {
  const post = await w.owner.post("@agent is the migration plan sound?", { kind: KIND.forumPost });
  await w.waitReplies(post);
  const bare = await w.owner.post("what about the rollback?", { replyTo: post, mention: false });
  const [reply] = await w.waitReplies(bare);
  assert.equal(reply!.kind, KIND.forumComment);
  assert.equal(threadRootOf(reply!), post.id, "in the post's thread");
  assert.match(reply!.content, /what about the rollback\?/);
});
