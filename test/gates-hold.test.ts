/**
 * `hold_replies` on a `stop: wait` approval gate, end to end: the daemon as a subprocess, the
 * demo agent over ACP, the proxy, and the approval gate (a real MCP server posting its request
 * with its own key, allowing once a listed approver reacts 👍). What the agent posts during
 * its turn is judged where a user sees it: nothing in the channel before the 👍, all of it
 * after, in the order the agent wrote it; a cancelled wait posts none of it and says so once.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { World, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { threadRootOf } from "../src/nostr/events.js";
import { approvalGate, lines } from "./fixtures/gates-helpers.js";
import { waitFor } from "../kit/wait.js";

let w: World;
let d: DaemonProc;
let approverPk: string;
/** The agent's messages in the channel, in the order the relay delivered them live. */
const arrived: Event[] = [];

before(async () => {
  w = await World.create({ channelName: "release-room" });
  const gate = await approvalGate(w, { approvers: [w.teammate.pk], countFile: join(w.dir, "approval-count.txt") });
  approverPk = gate.pk;
  d = await w.startDaemon({
    mcp: { servers: { approval: { ...gate.server, hold_replies: true } } },
    gates: { enforce: "bridge", wait_poll: "1s", wait_max: "60s" },
  });
  const watcher = await w.teammate.relay();
  watcher.watch(
    "hold-order",
    () => [{ kinds: [KIND.message], authors: [w.agent.pk], "#h": [w.channel] }],
    (ev) => {
      if (!arrived.some((e) => e.id === ev.id)) arrived.push(ev);
    },
  );
});
after(() => w.close());

const inThread = (root: Event) => arrived.filter((e) => e.id !== root.id && threadRootOf(e) === root.id);

/** The approval request the gate posted for the turn on `ev` (the one posted after `since`). */
async function requestAfter(known: Set<string>): Promise<Event> {
  const evs = await w.waitEvents({ kinds: [KIND.message], authors: [approverPk] }, (e) => e.some((x) => !known.has(x.id)), 30_000);
  const fresh = evs.filter((x) => !known.has(x.id));
  assert.equal(fresh.length, 1, "one approval request for the turn");
  return fresh[0]!;
}
const requestIds = async () => new Set((await w.query({ kinds: [KIND.message], authors: [approverPk] })).map((e) => e.id));

test("the agent's posts wait for the 👍: none in the channel before it, all of them after, in order", async () => {
  const mark = d.logs.length;
  const known = await requestIds();
  const ev = await w.owner.post(
    '@agent ship the release\n#tool send_message {"content":"step one: tagged"}\n#tool send_message {"content":"step two: built"}',
  );
  await w.waitReaction(ev, "⏳");
  const request = await requestAfter(known);
  const turn = (await d.waitLog((l) => l.evt === "gate.round" && l.verdict === "object" && d.logs.indexOf(l) >= mark)).turn;
  // The agent's turn is over (its three send_message calls answered) and the gate has objected:
  // a post that was not held would be in the relay by now.
  assert.deepEqual(
    await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] }),
    [],
    "nothing posted before the approval",
  );
  assert.deepEqual(inThread(ev), [], "nothing delivered live either");

  await w.teammate.react(request, "👍");
  await w.waitReaction(ev, "✅");
  const end = await d.waitLog((l) => l.evt === "turn.end" && String(l.turn) === String(turn));
  assert.equal(end.status, "answered");
  await waitFor(() => inThread(ev).length >= 3, { timeoutMs: 20_000, what: "the three held posts delivered" });
  const posts = inThread(ev);
  assert.equal(posts.length, 3, "each held post exactly once");
  assert.equal(posts[0]!.content, "step one: tagged");
  assert.equal(posts[1]!.content, "step two: built");
  // The answer comes last, and carries what send_message told the agent about its two notes.
  assert.match(posts[2]!.content, /ship the release/);
  assert.match(posts[2]!.content, /queued until approved by gate 'approval'/);
  const stored = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] });
  assert.equal(stored.length, 3, "the relay holds exactly the three posts");
  assert.equal(lines(d, mark, "gate.hold_released", (l) => String(l.turn) === String(turn))[0]?.count, 3);
});

test("a cancelled wait drops the held posts with one notice", async () => {
  const mark = d.logs.length;
  const ev = await w.owner.post('@agent deploy to production\n#tool send_message {"content":"deploying now"}');
  await w.waitReaction(ev, "⏳");
  const turn = (await d.waitLog((l) => l.evt === "gate.round" && l.verdict === "object" && d.logs.indexOf(l) >= mark)).turn;
  await w.owner.post("!cancel");
  const end = await d.waitLog((l) => l.evt === "turn.end" && String(l.turn) === String(turn));
  assert.equal(end.status, "cancelled");
  await w.waitReaction(ev, "⚠️");
  const msgs = await w.waitEvents({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] }, (e) => e.length > 0);
  assert.equal(msgs.length, 1, `one notice and nothing else: ${msgs.map((m) => JSON.stringify(m.content)).join(", ")}`);
  assert.match(msgs[0]!.content, /^Cancelled while waiting for gate 'approval'/);
  assert.match(
    msgs[0]!.content,
    /The 2 messages the agent wrote in this turn, held for the approval of gate 'approval', were not posted\./,
  );
  assert.ok(!inThread(ev).some((e) => /deploying now|deploy to production/.test(e.content)), "no held post was delivered");
  assert.equal(lines(d, mark, "gate.hold_dropped", (l) => String(l.turn) === String(turn))[0]?.count, 2);
});
