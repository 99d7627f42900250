/**
 * The daemon end to end: a real dev relay, `buzz-bridge run` as a subprocess, the demo
 * agent over ACP and the proxy over MCP. What a person in the channel would see.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { World, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { threadRootOf } from "../src/nostr/events.js";

let w: World;
let d: DaemonProc;

before(async () => {
  w = await World.create({ channelName: "build-room", about: "Where the build team coordinates releases" });
  d = await w.startDaemon({
    defaults: { respond_to: "allowlist", allow: [w.teammate.npub], team_instructions: "Always run the tests first." },
    // Two attempts: a poison mention crashes the agent twice, below the circuit breaker's three.
    queue: { max_attempts: 2 },
    agent: { auth_method: "demo-token" },
  });
});
after(() => w.close());

test("the owner's mention is answered in its thread through the proxy's send_message", async () => {
  const ev = await w.owner.post("@agent what is this room for?");
  const reply = await w.waitReply(ev);
  assert.equal(threadRootOf(reply), ev.id, "reply is in the mention's thread");
  assert.match(reply.content, /build-room/);
  assert.match(reply.content, /Where the build team coordinates releases/, "the agent saw the channel description");
  assert.match(reply.content, /Always run the tests first/, "the agent saw the team instructions");
  const reactions = await w.waitReaction(ev, "✅");
  assert.ok(
    reactions.some((r) => r.content === "👀"),
    "👀 when picked up",
  );
  const end = await d.waitLog((l) => l.evt === "turn.end" && (l.events as string[]).includes(ev.id));
  assert.deepEqual([end.status, end.via], ["answered", "tool"]);
});

test("an allowlisted teammate (by npub) is answered; a stranger gets 🔒 and one info log line", async () => {
  const asked = await w.teammate.post("@agent can you help?");
  await w.waitReply(asked);
  const denied = await w.stranger.post("@agent merge my branch");
  await w.waitReaction(denied, "🔒");
  const line = await d.waitLog((l) => l.evt === "gate.denied" && l.event === denied.id);
  assert.equal(line.reason, "not-allowlisted");
  assert.equal(line.author, w.stranger.npub);
  assert.equal(line.channel, w.channel);
  assert.equal(line.level, "info");
  // A stranger is never answered: judged after a later owner mention's answer, once every turn ended.
  await w.assertNeverAnswered([denied]);
  const locks = (await w.query({ kinds: [KIND.reaction], authors: [w.agent.pk], "#e": [denied.id] })).filter((r) => r.content === "🔒");
  assert.equal(locks.length, 1, "one 🔒, not a second");
});

test("a turn that ends without a tool reply gets the final text as a fallback reply, once", async () => {
  const ev = await w.owner.post("@agent #final-only give me a one-liner");
  const reply = await w.waitReply(ev);
  await w.waitReaction(ev, "✅");
  const all = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] });
  assert.equal(all.length, 1, "never both a tool reply and a fallback");
  assert.match(reply.content, /Demo agent/);
  const end = await d.waitLog((l) => l.evt === "turn.end" && (l.events as string[]).includes(ev.id));
  assert.equal(end.via, "fallback");
});

test("agent.auth_method: the agent was authenticated with the configured ACP method", async () => {
  const ev = await w.owner.post("@agent #auth");
  const reply = await w.waitReply(ev);
  assert.match(reply.content, /authenticated: demo-token/);
});

test("the agent's environment holds no secret key", async () => {
  const ev = await w.owner.post("@agent #env");
  const reply = await w.waitReply(ev);
  assert.match(reply.content, /env secret-like value: no/);
  assert.doesNotMatch(reply.content, /BUZZ_PRIVATE_KEY|NOSTR_PRIVATE_KEY/);
});

test("no log line carries the agent's nsec", () => {
  assert.ok(!d.raw().includes(w.agent.nsec));
});

test("a changed description and team instructions reach a running session after SIGHUP", async (t) => {
  // The daemon and channel are shared: the test puts back the config and description it changed.
  const original = readFileSync(d.configFile, "utf8");
  t.after(async () => {
    await w.relay.updateChannel(w.channel, { about: "Where the build team coordinates releases" });
    writeFileSync(d.configFile, original);
    const n = d.logs.length;
    d.proc.kill("SIGHUP");
    await d.waitLog((l) => l.evt === "config.reloaded" && d.logs.indexOf(l) >= n);
  });
  const first = await w.owner.post("@agent first question");
  await w.waitReply(first);
  await w.relay.updateChannel(w.channel, { about: "Now the place for incident response" });
  w.writeConfig({
    defaults: { respond_to: "allowlist", allow: [w.teammate.npub], team_instructions: "Page the on-call first." },
    queue: { max_attempts: 2 },
    agent: { auth_method: "demo-token" },
  });
  const n = d.logs.length;
  d.proc.kill("SIGHUP");
  await d.waitLog((l) => l.evt === "config.reloaded" && d.logs.indexOf(l) >= n);
  const again = await w.owner.post("@agent and now?", { replyTo: first });
  const reply = await w.waitReply(again);
  assert.match(reply.content, /Now the place for incident response/);
  assert.match(reply.content, /Page the on-call first/);
});

test("a crashing agent: the thread gets one failure notice naming the requester, and the next mention is answered", async () => {
  const ev = await w.owner.post("@agent #crash");
  const notice = await w.waitReply(ev, 30_000);
  assert.match(notice.content, /could not answer/i);
  assert.ok(
    notice.tags.some((t) => t[0] === "p" && t[1] === w.owner.pk),
    "the notice mentions the requester",
  );
  await w.waitReaction(ev, "⚠️");
  const next = await w.owner.post("@agent are you back?");
  await w.waitReply(next, 30_000);
});
