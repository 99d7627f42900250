/**
 * Stop gates in `wait` mode, end to end: the daemon as a subprocess, the demo agent over
 * ACP, the proxy, and an approval gate (a real MCP server) that posts its request into the
 * channel with its own key and allows once a listed approver reacts 👍 — a human
 * approval that no model rejection budget could wait for.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { World, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { approvalGate, hookCalls, lines, prompts, rounds } from "./fixtures/gates-helpers.js";
import { waitFor } from "../kit/wait.js";
import type { Event } from "nostr-tools";

let w: World;
let d: DaemonProc;
let approverPk: string;
let countFile: string;

before(async () => {
  w = await World.create({ channelName: "release-room" });
  countFile = join(w.dir, "approval-count.txt");
  const gate = await approvalGate(w, { approvers: [w.teammate.pk], countFile });
  approverPk = gate.pk;
  d = await w.startDaemon({
    mcp: { servers: { approval: gate.server } },
    gates: { enforce: "bridge", wait_poll: "1s", wait_max: "60s" },
  });
});
after(() => w.close());

/** The ids of the approval requests posted so far (each gate process posts one: a turn's own). */
async function requestIds(): Promise<Set<string>> {
  return new Set((await w.query({ kinds: [KIND.message], authors: [approverPk] })).map((e) => e.id));
}

/** The one approval request posted since `known` was read: the waiting turn's. */
async function newRequest(known: Set<string>): Promise<Event> {
  const fresh = (evs: Event[]) => evs.filter((e) => !known.has(e.id));
  const evs = await w.waitEvents({ kinds: [KIND.message], authors: [approverPk] }, (e) => fresh(e).length > 0, 30_000);
  assert.equal(fresh(evs).length, 1, "one approval request for the turn");
  return fresh(evs)[0]!;
}

/** The agent's messages in `ev`'s thread as they are now (the answer is posted before the turn waits). */
const posted = (ev: Event) => w.waitEvents({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] }, (e) => e.length > 0);

test("wait mode: the bridge waits for a 👍 by a listed approver without prompting the agent again, then completes", async () => {
  const mark = d.logs.length;
  const known = await requestIds();
  const ev = await w.owner.post("@agent ship the release");
  const [reply] = await posted(ev);
  assert.match(reply!.content, /ship the release/, "the demo agent answered");
  await w.waitReaction(ev, "⏳");
  const request = await newRequest(known);
  assert.match(request.content, /React with 👍 to approve/);
  const turn = (await d.waitLog((l) => l.evt === "gate.round" && l.verdict === "object" && d.logs.indexOf(l) >= mark)).turn;

  // Someone who is not an approver reacts: it does not count. A follow-up in the thread
  // waits too: the waiting turn still holds its scope.
  await w.stranger.react(request, "👍");
  const followUp = await w.owner.post("@agent and tag it v2", { replyTo: ev });
  // The later positive: two more rounds of the gate once the follow-up was accepted (the
  // second began after the stranger's 👍 and the follow-up were both in place).
  const accepted = d.logs.indexOf(await d.waitLog((l) => l.evt === "gate.accepted" && l.event === followUp.id));
  await waitFor(() => rounds(d, accepted, turn).length >= 2, { timeoutMs: 20_000, what: "two gate rounds after the follow-up" });
  const waitRounds = rounds(d, mark, turn);
  assert.ok(
    waitRounds.every((r) => r.verdict === "object"),
    "nobody approved yet",
  );
  assert.equal(prompts(d, mark), 1, "no session/prompt while waiting (not even for the follow-up)");
  const before = await w.query({ kinds: [KIND.reaction], authors: [w.agent.pk], "#e": [ev.id] });
  assert.ok(!before.some((r) => r.content === "✅"), "not done while waiting");

  const roundsBeforeApproval = rounds(d, mark, turn).length;
  await w.teammate.react(request, "👍");
  await w.waitReaction(ev, "✅");
  await w.waitReply(ev); // the turn ended: still exactly one answer
  // ⏳ is taken back once the wait is over, so ✅ stands alone on the message.
  await w.waitEvents({ kinds: [KIND.reaction], authors: [w.agent.pk], "#e": [ev.id] }, (rs) => !rs.some((r) => r.content === "⏳"));
  const end = await d.waitLog((l) => l.evt === "turn.end" && String(l.turn) === String(turn));
  assert.equal(end.status, "answered");
  const upToEnd = d.logs.slice(mark, d.logs.indexOf(end)).filter((l) => l.evt === "agent.turn_end").length;
  assert.equal(upToEnd, 1, "the approval did not cost a model turn");

  const all = rounds(d, mark, turn);
  const after = all.slice(roundsBeforeApproval);
  assert.equal(after.at(-1)!.verdict, "allow", "the last round allowed");
  assert.ok(after.length <= 2, `allowed within one poll of the approval (rounds after it: ${after.map((r) => r.verdict).join(",")})`);
  // The log line per round: turn, round number, verdict, time waited, servers.
  assert.deepEqual(
    all.map((r) => r.round),
    all.map((_, i) => i + 1),
  );
  assert.equal(all[0]!.waited_ms, 0);
  assert.ok((all.at(-1)!.waited_ms as number) > 0);
  const servers = all.at(-1)!.servers as Array<Record<string, unknown>>;
  assert.deepEqual(
    servers.map((s) => [s.name, s.verdict, s.timed_out]),
    [["approval", "allow", false]],
  );

  const calls = hookCalls(countFile);
  assert.deepEqual(
    calls.slice(0, all.length),
    all.map((r) => ["_Stop", r.verdict]),
    "one _Stop call per logged round, same verdicts",
  );
  assert.deepEqual(lines(d, mark, "turn.error"), []);
  const raw = d
    .raw()
    .split("\n")
    .find((l) => l.includes('"gate.round"'))!;
  assert.equal(raw.match(/"turn":/g)?.length, 1, `a gate.round line names its turn once: ${raw}`);

  // The follow-up held back by the wait is answered next, in the same session: the
  // approval sticks (the gate already allowed), so it ends without waiting again.
  const answer = await w.waitReply(followUp);
  assert.match(answer.content, /tag it v2/);
  await w.waitReaction(followUp, "✅");
});

test("!cancel by the owner during a wait ends the turn cleanly; the next mention is answered", async () => {
  const mark = d.logs.length;
  const ev = await w.owner.post("@agent deploy to production");
  await w.waitReaction(ev, "⏳");
  const turn = (await d.waitLog((l) => l.evt === "gate.round" && l.verdict === "object" && d.logs.indexOf(l) >= mark)).turn;
  const cancel = await w.owner.post("!cancel");
  const [outcome] = await w.waitEvents({ kinds: [KIND.system], authors: [w.agent.pk], "#e": [cancel.id] }, (e) => e.length > 0);
  assert.equal(JSON.parse(outcome!.content).outcome, "cancelled");
  const end = await d.waitLog((l) => l.evt === "turn.end" && String(l.turn) === String(turn));
  assert.equal(end.status, "cancelled");
  const reactions = await w.query({ kinds: [KIND.reaction], authors: [w.agent.pk], "#e": [ev.id] });
  assert.ok(!reactions.some((r) => r.content === "✅"), "a cancelled turn gets no ✅");
  const [cancelNotice] = await w
    .waitEvents({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] }, (e) =>
      e.some((x) => /^Cancelled while waiting for gate 'approval'/.test(x.content)),
    )
    .then((e) => e.filter((x) => /^Cancelled while waiting/.test(x.content)));
  assert.ok(cancelNotice, "one notice says the gate never allowed");
  await w.waitEvents({ kinds: [KIND.reaction], authors: [w.agent.pk], "#e": [ev.id] }, (e) => e.some((r) => r.content === "⚠️"));
  assert.equal(prompts(d, mark), 1);

  // The bridge is not stuck: a new mention (a new thread, a new approval) is answered and waits again.
  const known = await requestIds();
  const next = await w.owner.post("@agent are you still there?");
  const [reply] = await posted(next);
  assert.match(reply!.content, /are you still there/);
  await w.waitReaction(next, "⏳");
  await w.teammate.react(await newRequest(known), "👍");
  await w.waitReaction(next, "✅");
  await w.waitReply(next);
  // Nothing after !cancel: with the later mention answered and its turn over, the cancelled thread is final.
  assert.deepEqual(
    await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] }).then((e) => e.length),
    2,
    "only the answer the agent posted before the wait and the one cancellation notice",
  );
});

test("the agent dies during a wait: its gate can no longer answer, so the wait ends with a notice instead of lasting wait_max", async () => {
  const ev = await w.owner.post("@agent roll out the fix");
  await w.waitReaction(ev, "⏳");
  const scope = `${w.channel}/${ev.id}`;
  const session = await d.waitLog((l) => l.evt === "turn.session" && l.scope === scope);
  process.kill(session.agent_pid as number, "SIGKILL");
  const evs = await w.waitEvents(
    { kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] },
    (e) => e.some((x) => /Stopped waiting/.test(x.content)),
    40_000,
  );
  assert.match(evs.find((x) => /Stopped waiting/.test(x.content))!.content, /'approval'.*can no longer be reached/);
  const end = await d.waitLog((l) => l.evt === "turn.end" && l.scope === scope);
  // The answer posted before the wait stands: the turn ends answered (not failed, not cancelled),
  // marked ⚠️ and never ✅, since the gate never allowed it.
  assert.equal(end.status, "answered");
  const reactions = await w.waitEvents({ kinds: [KIND.reaction], authors: [w.agent.pk], "#e": [ev.id] }, (e) =>
    e.some((r) => r.content === "⚠️"),
  );
  assert.ok(!reactions.some((r) => r.content === "✅"), "a gate that never allowed never ends ✅");

  const known = await requestIds();
  const next = await w.owner.post("@agent back again?");
  await w.teammate.react(await newRequest(known), "👍");
  await w.waitReply(next, 40_000);
});
