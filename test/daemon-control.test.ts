/**
 * Owner control commands, timeouts and permission questions, end to end through the
 * daemon subprocess, the demo agent and the dev relay.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { World, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { cardAnswer } from "../src/nostr/cards.js";

let w: World;
let d: DaemonProc;

before(async () => {
  w = await World.create();
  d = await w.startDaemon({
    agent: { idle_timeout: "2s", cancel_grace: "1s", permissions: "ask-owner", permission_timeout: "5m" },
    queue: { max_attempts: 1 },
  });
});
after(() => w.close());

const outcomes = (ev: { id: string }) => w.query({ kinds: [KIND.system], authors: [w.agent.pk], "#e": [ev.id] });

test("!cancel from the owner ends a running turn, with a 40099 outcome in the thread and no failure notice", async () => {
  const hang = await w.owner.post("@agent #hang");
  await w.waitReaction(hang, "👀");
  const cmd = await w.owner.post("!cancel", { replyTo: hang });
  const [outcome] = await w.waitEvents({ kinds: [KIND.system], authors: [w.agent.pk], "#e": [hang.id] }, (e) => e.length > 0);
  const payload = JSON.parse(outcome!.content) as Record<string, unknown>;
  assert.equal(payload.actor, w.owner.pk);
  assert.equal(payload.target, w.agent.pk);
  assert.match(String(payload.type), /cancel/);
  await d.waitLog((l) => l.evt === "turn.end" && l.status === "cancelled");
  const replies = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [hang.id] });
  assert.deepEqual(
    replies.filter((r) => /could not answer/.test(r.content)),
    [],
    "a cancelled turn gets no failure notice",
  );
  assert.ok(
    !(await w.query({ kinds: [KIND.message], "#e": [cmd.id], authors: [w.agent.pk] })).length,
    "the command itself is not answered as a mention",
  );
  const next = await w.owner.post("@agent still there?", { replyTo: hang });
  await w.waitReply(next);
});

test("!cancel from a stranger is ordinary (denied) chat, not a command", async () => {
  const ev = await w.stranger.post("!cancel");
  await d.waitLog((l) => l.evt === "gate.denied" && l.event === ev.id);
  assert.deepEqual(await outcomes(ev), []);
});

test("an agent silent past idle_timeout is cancelled and the thread gets a notice", async () => {
  const ev = await w.owner.post("@agent #ignore-cancel");
  const notice = await w.waitReply(ev, 30_000);
  assert.match(notice.content, /idle timeout/);
  await w.waitReaction(ev, "⚠️");
});

test("ask-owner: the permission question is posted in the thread (a card and a plain message) and the owner's 👍 allows it", async () => {
  const ev = await w.owner.post("@agent #permission");
  const [question] = await w.waitEvents(
    { kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] },
    (e) => e.some((m) => /Permission needed/.test(m.content)),
    30_000,
  );
  const q = (await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] })).find((m) =>
    /Permission needed/.test(m.content),
  )!;
  assert.ok(question && q.tags.some((t) => t[0] === "p" && t[1] === w.owner.pk), "the question mentions the owner");
  const cards = await w.query({ kinds: [KIND.questionCard], authors: [w.agent.pk], "#e": [ev.id] });
  assert.deepEqual(
    cards.map((c) => (JSON.parse(c.content) as { options: { label: string }[] }).options.map((o) => o.label)),
    [["Allow", "Deny"]],
    "the same question as a card, for clients that show cards",
  );
  await w.owner.react(q, "👍");
  const replies = await w.waitEvents(
    { kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] },
    (e) => e.some((m) => /permission: /.test(m.content)),
    30_000,
  );
  const report = replies.find((m) => /permission: /.test(m.content))!;
  assert.match(report.content, /permission: allowed \(demo-yes\)/, "allowed, choosing the allow_once option by kind");
});

test("ask-owner: the owner's Deny on the card refuses it, and the agent is told so at once", async () => {
  // permission_timeout is 5 minutes: a Deny the bridge ignored could not turn into a deny by silence within this test.
  const ev = await w.owner.post("@agent #permission");
  const [card] = await w.waitEvents({ kinds: [KIND.questionCard], authors: [w.agent.pk], "#e": [ev.id] }, (e) => e.length > 0, 30_000);
  const { outcome } = await (await w.owner.relay()).send(cardAnswer(card!, { action: "accept", answer: "Deny" }, w.channel));
  assert.equal(outcome.status, "accepted");
  const replies = await w.waitEvents(
    { kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] },
    (e) => e.some((m) => /permission: /.test(m.content)),
    30_000,
  );
  const reports = replies.filter((m) => /permission: /.test(m.content));
  assert.equal(reports.length, 1);
  assert.match(reports[0]!.content, /permission: denied \(demo-no\)/, "denied, choosing the reject_once option by kind");
});

test("!rotate ends the thread's session; the next mention starts a fresh one", async () => {
  const first = await w.owner.post("@agent hello");
  await w.waitReply(first);
  const sessions = () => d.logs.filter((l) => l.evt === "turn.session").length;
  const before = sessions();
  const cmd = await w.owner.post("!rotate", { replyTo: first });
  await w.waitEvents({ kinds: [KIND.system], authors: [w.agent.pk], "#e": [first.id] }, (e) => e.some((x) => /rotate/.test(x.content)));
  void cmd;
  const again = await w.owner.post("@agent hello again", { replyTo: first });
  await w.waitReply(again);
  assert.equal(sessions(), before + 1, "a new agent session was opened for the thread");
});
