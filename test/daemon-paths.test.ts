/**
 * Paths users hit that the other daemon tests do not walk, each through the real daemon,
 * relay and demo agent: unicode through the whole path, typing indicators, max_turn and
 * idle_close, direct messages, a 256 KB mention, removal from a channel in the middle of
 * a turn (the relay then refuses the bridge's replies), and `!shutdown` (last: it stops the daemon).
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { World, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { reactionTarget, threadRootOf } from "../src/nostr/events.js";
import { RelayClient } from "../src/relay/index.js";
import { createLogger } from "../src/base/log.js";
import { sleep, waitFor } from "../kit/wait.js";

let w: World;
let d: DaemonProc;
const ch: Record<string, string> = {};

before(async () => {
  w = await World.create({ channelName: "paths-room" });
  ch.main = w.channel;
  ch.dmOwner = await w.addChannel({ name: "dm-owner", type: "dm", members: [w.agent, w.owner] });
  ch.dmTeammate = await w.addChannel({ name: "dm-teammate", type: "dm", members: [w.agent, w.teammate] });
  ch.leaving = await w.addChannel({ name: "leaving-room" });
  ch.big = await w.addChannel({ name: "big-room" });
  d = await w.startDaemon({
    agent: { max_turn: "5s", idle_close: "2s" },
    queue: { max_attempts: 1 },
    defaults: { on_denied: "react" },
    log: { level: "info" },
  });
});
after(() => w.close());

test("unicode, emoji, combining marks and right-to-left text come back intact in the answer", async () => {
  const text = "مرحبا بالعالم ‏שלום עולם‎ 👋🏽👨‍👩‍👧 z̴͝a̵l̶g̷o 𝕏𝔶𝔷 家族 \u202eRTL-override\u202c end";
  const ev = await w.owner.post(`@agent ${text}`);
  const reply = await w.waitReply(ev, 30_000);
  assert.ok(reply.content.includes(text), `the answer quotes the mention byte for byte:\n${reply.content}`);
});

test("typing indicators in the mention's thread while the agent works, none once it has answered", { timeout: 40_000 }, async () => {
  const watcher = new RelayClient({ url: w.relay.url, secretKey: w.teammate.sk, logger: createLogger({ level: "silent" }) });
  // The agent's typing indicators and reactions, in the order the relay delivered them.
  const seen: Event[] = [];
  watcher.on("event", (ev: Event) => {
    if ((ev.kind === KIND.typing || ev.kind === KIND.reaction) && ev.pubkey === w.agent.pk) seen.push(ev);
  });
  await watcher.start();
  watcher.setChannels([{ id: ch.main!, kinds: [KIND.typing, KIND.reaction], requireMention: false }]);
  assert.ok(await watcher.waitSubscribed(10_000));
  try {
    // Typing is best effort: the frame budget (50 frames per 5 s, Buzz's quota) drops it first
    // when short, and the daemon's start (subscriptions, profile, directory entry, presence,
    // beacon) and the last test's turn spent frames moments ago. One budget window lets them age
    // out, so what is judged here is where typing goes, not whether a busy budget had room.
    await sleep(5000);
    const ev = await w.owner.post("@agent take your time #slow 3500");
    await w.waitReply(ev, 30_000);
    // The subscription also brings stored reactions of earlier tests: the turn's own ✅ is the one on `ev`.
    const ended = (e: Event) => e.kind === KIND.reaction && e.content === "✅" && reactionTarget(e) === ev.id;
    await waitFor(() => seen.some(ended), { what: "the ✅ that ends the turn, on the watcher" });
    const typing = seen.filter((e) => e.kind === KIND.typing && threadRootOf(e) === ev.id);
    assert.ok(typing.length >= 1, "at least one typing indicator while the agent worked");
    assert.deepEqual(
      seen.filter((e) => e.kind === KIND.typing && threadRootOf(e) !== ev.id),
      [],
      "typing is shown in the mention's thread, and only while it is answered",
    );
    await sleep(4000); // longer than the 3 s typing repeat: to show no indicator comes after the turn's end
    const done = seen.findIndex(ended);
    assert.deepEqual(
      seen.slice(done + 1).filter((e) => e.kind === KIND.typing),
      [],
      "no typing after the turn's ✅ (the indicator repeats every 3 s while the agent works)",
    );
  } finally {
    watcher.stop();
  }
});

test("max_turn: a turn past its time limit is stopped and the thread gets exactly one failure notice", { timeout: 40_000 }, async () => {
  const ev = await w.owner.post("@agent think forever #hang");
  // Once the turn ended for good (no retry left to answer later): exactly one message, the notice.
  const notice = await w.waitReply(ev, 30_000);
  assert.match(notice.content, /past its time limit \(max_turn\)/);
  assert.ok(notice.tags.some((t) => t[0] === "buzz" && t[1] === "agent-failure"));
});

test("idle_close: an agent idle past idle_close is stopped; the thread's next mention is answered by a fresh one", {
  timeout: 40_000,
}, async () => {
  const first = await w.owner.post("@agent first");
  await w.waitReply(first, 30_000);
  const closed = await d.waitLog((l) => l.evt === "agent.idle_close" && String(l.scope).endsWith(first.id), 15_000);
  const next = await w.owner.post("@agent and again", { replyTo: first });
  const reply = await w.waitReply(next, 30_000);
  assert.match(reply.content, /and again/);
  const session = d.logs.filter((l) => l.evt === "turn.session" && String(l.scope).endsWith(first.id));
  assert.equal(session.length, 2, "a second session was opened for the thread");
  assert.notEqual(session[1]!.agent_pid, closed.agent_pid, "by another process");
});

test("a DM from the owner is answered in its thread; a teammate's DM is refused silently (no lock, no reply)", {
  timeout: 40_000,
}, async () => {
  const ev = await w.owner.post("@agent in private please", { channel: ch.dmOwner });
  const reply = await w.waitReply(ev, 30_000);
  assert.match(reply.content, /in private please/);
  assert.equal(reply.tags.find((t) => t[0] === "h")?.[1], ch.dmOwner, "answered in the DM");
  const denied = await w.teammate.post("@agent can you help me?", { channel: ch.dmTeammate });
  await d.waitLog((l) => l.evt === "gate.denied" && l.event === denied.id);
  assert.equal(d.logs.find((l) => l.evt === "gate.denied" && l.event === denied.id)!.reason, "dm-not-owner");
  await w.laterAnswer({ channel: ch.dmOwner, decided: [denied] });
  assert.deepEqual(await w.query({ authors: [w.agent.pk], "#e": [denied.id] }), [], "no reaction and no reply in a DM");
});

test("a 256 KB mention reaches the agent and is answered with exactly one message within the relay's size limit", {
  timeout: 60_000,
}, async () => {
  const body = "lorem ipsum dolor sit amet ".repeat(10_000).slice(0, 256 * 1024 - 40);
  const ev = await w.owner.post(`@agent [big] ${body}`, { channel: ch.big });
  assert.ok(Buffer.byteLength(ev.content) > 255 * 1024);
  const mark = d.logs.length;
  const reply = await w.waitReply(ev, 45_000);
  assert.ok(reply.content.includes("[big] lorem ipsum"), "the answer quotes the mention (the agent got it)");
  assert.ok(Buffer.byteLength(reply.content) <= 256 * 1024, "within the relay's content limit");
  assert.deepEqual(
    d.logs.slice(mark).filter((l) => l.evt === "relay.publish_failed"),
    [],
    "nothing was refused",
  );
  assert.equal(d.proc.exitCode, null);
});

test("removed from a channel mid-turn: nothing more is posted there, each refused publish is logged with the reason, other channels are still answered", {
  timeout: 60_000,
}, async () => {
  const mark = d.logs.length;
  // Held until the daemon knows it has left: the turn surely ends (and tries to answer) after the removal.
  const release = join(w.dir, "release-leaving");
  const ev = await w.owner.post(`@agent long job #hold ${release}`, { channel: ch.leaving });
  await w.waitReaction(ev, "👀", 20_000);
  await w.relay.removeMember(ch.leaving!, w.agent.pk);
  const removedAt = Math.floor(Date.now() / 1000);
  await d.waitLog((l) => l.evt === "relay.channel_left" && l.channel === ch.leaving, 20_000);
  writeFileSync(release, "");
  await d.waitLog((l) => l.evt === "turn.end" && (l.events as string[]).includes(ev.id), 30_000);
  // A later mention answered and every turn ended for good (a retry, a failure notice): nothing more can come.
  await w.laterAnswer();
  const after = (await w.query({ authors: [w.agent.pk], "#h": [ch.leaving] })).filter((e) => e.created_at > removedAt);
  assert.deepEqual(
    after.map((e) => `${e.kind}:${e.content.slice(0, 40)}`),
    [],
    "the relay holds nothing from the agent after the removal",
  );
  const failedPublishes = d.logs.slice(mark).filter((l) => l.evt === "relay.publish_failed");
  assert.ok(
    failedPublishes.every((l) => /not a channel member/.test(String(l.reason))),
    "each refusal is logged with the relay's reason",
  );
  assert.ok(
    failedPublishes.length <= 6,
    `a handful of refused publishes, no retry storm: ${JSON.stringify(failedPublishes.map((l) => [l.kind, l.status, l.reason]))}`,
  );
});

// Last: it stops the daemon.
test("!shutdown from the owner: a 40099 outcome in its thread, then the daemon exits 0", { timeout: 40_000 }, async () => {
  const ev = await w.owner.post("!shutdown");
  const outcome = await w.waitEvents({ kinds: [KIND.system], authors: [w.agent.pk], "#e": [ev.id] }, (e) => e.length >= 1, 20_000);
  assert.match(outcome[0]!.content, /shutdown/);
  assert.equal(await d.exited, 0, "a clean exit");
  assert.ok(d.logs.some((l) => l.evt === "daemon.stopping"));
});
