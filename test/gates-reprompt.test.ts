/**
 * Stop gates in `reprompt` mode, end to end (daemon subprocess, demo agent, proxy, real
 * MCP gate servers answering buzz-hooks style: plain text, never isError). Each channel
 * gets its own gate servers through the per-channel `mcp` list, so one daemon shows:
 * a gate that objects twice then allows, one that objects forever against
 * `max_rejections: 2`, and a reprompt gate mixed with a human approval gate.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { World, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { approvalGate, gateServer, hookCalls, type Line, reactIn, rounds } from "./fixtures/gates-helpers.js";

let w: World;
let d: DaemonProc;
const ch: Record<string, string> = {};
let approverPk: string;
let twiceCount: string;

before(async () => {
  w = await World.create({ channelName: "twice-room" });
  ch.twice = w.channel;
  ch.forever = await w.addChannel({ name: "forever-room" });
  ch.mixed = await w.addChannel({ name: "mixed-room" });
  ch.pair = await w.addChannel({ name: "pair-room" });
  twiceCount = join(w.dir, "twice-count.txt");
  const approval = await approvalGate(w, { approvers: [w.owner.pk], countFile: join(w.dir, "approval-count.txt"), channel: ch.mixed });
  approverPk = approval.pk;
  d = await w.startDaemon({
    mcp: {
      servers: {
        twice: gateServer({
          GATE_STOP_TEXT: "The changelog has no entry for this change.",
          GATE_OBJECT_TIMES: "2",
          GATE_COUNTER_FILE: twiceCount,
        }),
        forever: gateServer({ GATE_STOP_TEXT: "CI is red: run #42 concluded failure." }),
        docs: gateServer({ GATE_STOP_TEXT: "The README does not describe the new flag." }),
        lint: gateServer({ GATE_STOP_TEXT: "Run the linter before you finish.", GATE_OBJECT_TIMES: "1" }),
        approval: approval.server,
      },
    },
    gates: { enforce: "bridge", max_rejections: 2, wait_poll: "1s", wait_max: "60s" },
    defaults: { mcp: [] },
    channels: [
      { id: ch.twice, mcp: ["twice"] },
      { id: ch.forever, mcp: ["forever"] },
      { id: ch.mixed, mcp: ["lint", "approval"] },
      { id: ch.pair, mcp: ["forever", "docs"] },
    ],
  });
});
after(() => w.close());

/** Runs one mention to its `turn.end`; returns what the test needs to look at. */
async function turnOf(text: string, channel: string) {
  const mark = d.logs.length;
  const ev = await w.owner.post(text, { channel });
  const accepted = await d.waitLog((l) => l.evt === "gate.accepted" && l.event === ev.id);
  const scope = `${channel}/${ev.id}`;
  const end = await d.waitLog((l) => l.evt === "turn.end" && l.scope === scope && d.logs.indexOf(l) > d.logs.indexOf(accepted), 60_000);
  const window = d.logs.slice(mark, d.logs.indexOf(end));
  const prompts = window.filter((l) => l.evt === "agent.turn_end").length;
  return { ev, end, turn: end.turn, prompts, rounds: rounds(d, mark, end.turn) };
}

/**
 * The agent's messages in `ev`'s thread once `pred` holds. Counting them would not count
 * prompts: identical replies within one second are one event (same id) to the relay.
 */
function repliesWhere(ev: Event, pred: (evs: Event[]) => boolean): Promise<Event[]> {
  return w.waitEvents({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] }, pred, 30_000);
}

const verdicts = (rs: Line[]) => rs.map((r) => r.verdict);

test("reprompt: a gate that objects twice then allows costs exactly two extra prompts, and the agent gets the objection", async () => {
  const t = await turnOf("@agent bump the version", ch.twice!);
  assert.equal(t.end.status, "answered");
  assert.equal(t.prompts, 3, "the first prompt plus exactly two gate re-prompts");
  assert.deepEqual(verdicts(t.rounds), ["object", "object", "allow"]);
  assert.ok(
    t.rounds.every((r) => r.waited_ms === 0),
    "reprompt rounds never wait",
  );
  assert.deepEqual(
    hookCalls(twiceCount).map((c) => c[0]),
    ["_Stop", "_Stop", "_Stop"],
    "one _Stop call per round",
  );

  const objection = /Asked: \[twice\] The changelog has no entry for this change\./;
  const replies = await repliesWhere(t.ev, (evs) => evs.some((r) => objection.test(r.content)));
  assert.equal(replies.filter((r) => /Asked: .*bump the version/.test(r.content)).length, 1, "one answer to the mention");
  assert.ok(
    replies.some((r) => objection.test(r.content)),
    "the demo agent saw the objection text in a re-prompt",
  );
  await w.waitReaction(t.ev, "✅");
  assert.ok(!replies.some((r) => /still objects/.test(r.content)), "no budget notice");

  // The proxy logs each fan-out on its stderr, which the agent passes on: the daemon's log
  // carries them as its own `proxy.log` lines of the turn's scope, the fan-out under `proxy`.
  const fanouts = (l: Record<string, unknown>) =>
    l.evt === "proxy.log" && (l.proxy as { evt?: string } | undefined)?.evt === "hook" && l.scope === t.end.scope;
  await d.waitLog((l) => fanouts(l) && d.logs.filter(fanouts).length >= 3);
  const lines = d.logs.filter(fanouts).map((l) => l.proxy) as unknown as Line[];
  assert.deepEqual(verdicts(lines), ["object", "object", "allow"]);
  assert.ok(!d.logs.some((l) => l.evt === "agent.stderr" && String(l.line).includes('"evt":"hook"')), "no fan-out left as stderr text");
});

test("budget: a gate that objects forever with max_rejections 2 ends the turn with a notice naming the gate", async () => {
  const t = await turnOf("@agent release it", ch.forever!);
  assert.equal(t.end.status, "answered");
  assert.equal(t.prompts, 3, "two re-prompts, then no more");
  assert.deepEqual(verdicts(t.rounds), ["object", "object", "object"]);
  const replies = await repliesWhere(t.ev, (evs) => evs.some((r) => /still objects/.test(r.content)));
  const notice = replies.find((r) => /still objects/.test(r.content));
  assert.ok(notice, `a notice in the thread: ${replies.map((r) => r.content.slice(0, 80)).join(" | ")}`);
  assert.match(notice!.content, /'forever'/, "the notice names the gate");
  assert.match(notice!.content, /2 re-prompts/);
  assert.ok(
    notice!.tags.some((tag) => tag[0] === "p" && tag[1] === w.owner.pk),
    "the notice mentions the requester",
  );
});

test("budget counts rounds, not objections: two gates objecting forever still cost two re-prompts; the notice names both", async () => {
  const t = await turnOf("@agent land the branch", ch.pair!);
  assert.equal(t.prompts, 3);
  assert.deepEqual(verdicts(t.rounds), ["object", "object", "object"]);
  assert.ok(
    t.rounds.every((r) => (r.servers as Line[]).filter((s) => s.verdict === "object").length === 2),
    "both objected in every round",
  );
  const replies = await repliesWhere(t.ev, (evs) => evs.some((r) => /still objects/.test(r.content)));
  const notice = replies.find((r) => /still objects/.test(r.content))!;
  assert.match(notice.content, /'forever', 'docs'/);
  // One re-prompt carried both gates' texts (the demo agent reports each objection it was given).
  const both = replies.find(
    (r) =>
      r.content.includes("Objection: [forever] CI is red: run #42 concluded failure.") &&
      r.content.includes("Objection: [docs] The README does not describe the new flag."),
  );
  assert.ok(both, `a re-prompt carried both objections: ${replies.map((r) => JSON.stringify(r.content.slice(-200))).join(" | ")}`);
});

test("mixed: a reprompt gate and a wait gate — the reprompt objection costs one prompt, then the bridge waits for the human", async () => {
  const mark = d.logs.length;
  const ev = await w.owner.post("@agent publish the package", { channel: ch.mixed });
  await w.waitReaction(ev, "⏳", 40_000);
  const [request] = await w.waitEvents({ kinds: [KIND.message], authors: [approverPk] }, (e) => e.length > 0);
  assert.equal(
    d.logs.slice(mark).filter((l) => l.evt === "agent.turn_end").length,
    2,
    "one re-prompt for the lint gate, none for the approval",
  );
  const replies = await repliesWhere(ev, (evs) => evs.some((r) => /\[lint\]/.test(r.content)));
  assert.equal(
    replies.filter((r) => /Asked: \[lint\] Run the linter before you finish\./.test(r.content)).length,
    1,
    "the re-prompt carried the lint objection",
  );
  assert.ok(!replies.some((r) => /\[approval\]/.test(r.content)), "a wait gate's objection is for humans, not the model");

  await reactIn(w.owner, request!, "👍", ch.mixed!);
  await w.waitReaction(ev, "✅");
  const end = await d.waitLog((l) => l.evt === "turn.end" && l.scope === `${ch.mixed}/${ev.id}`);
  assert.equal(end.status, "answered");
  const rs = rounds(d, mark, end.turn);
  assert.deepEqual(
    rs[0]!.servers && (rs[0]!.servers as Line[]).map((s) => [s.name, s.verdict]),
    [
      ["lint", "object"],
      ["approval", "object"],
    ],
    "round 1: both objected (one round, one budget unit)",
  );
  assert.deepEqual(
    (rs[1]!.servers as Line[]).map((s) => [s.name, s.verdict]),
    [
      ["lint", "allow"],
      ["approval", "object"],
    ],
  );
  assert.deepEqual(
    (rs.at(-1)!.servers as Line[]).map((s) => [s.name, s.verdict]),
    [["approval", "allow"]],
    "while waiting only the wait gate is asked",
  );
  assert.equal(d.logs.slice(mark, d.logs.indexOf(end)).filter((l) => l.evt === "agent.turn_end").length, 2, "no prompt while waiting");
});
