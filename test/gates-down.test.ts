/**
 * A gate a person counts on fails closed (README "Gates"): a `stop: wait` server that is not
 * running when `_Stop` is due — its command fails to start — counts as its `on_error`, which
 * defaults to `object`. The turn waits (⏳), the thread gets ONE notice naming the gate and
 * why, `gate.down` is logged and counted in `/metrics`; when the gate comes back and allows,
 * the turn ends ✅, and `!cancel` ends a wait on a gate that never comes back. Judged from
 * the channel, with the daemon, the proxy and the gate as real processes.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { World, type DaemonProc } from "../kit/world.js";
import { gateServer, rounds } from "./fixtures/gates-helpers.js";
import { isProgressNote } from "../src/nostr/events.js";
import { KIND } from "../src/nostr/kinds.js";

let w: World;
let d: DaemonProc;
let startFile: string;
const ch: Record<string, string> = {};

before(async () => {
  w = await World.create({ channelName: "release-room" });
  ch.back = w.channel;
  ch.never = await w.addChannel({ name: "never-room" });
  startFile = join(w.dir, "approval-may-start");
  d = await w.startDaemon({
    mcp: {
      servers: {
        // Comes up once the test says so; allows every _Stop then.
        approval: gateServer({ GATE_START_AFTER_FILE: startFile }, "wait"),
        // Never starts.
        sentinel: { command: join(w.dir, "no-such-gate"), stop: "wait" },
      },
    },
    gates: { enforce: "bridge", wait_poll: "1s", wait_max: "5m" },
    defaults: { mcp: [] },
    channels: [
      { id: ch.back, mcp: ["approval"] },
      { id: ch.never, mcp: ["sentinel"] },
    ],
    http: { listen: "127.0.0.1:0" },
  });
});
after(() => w.close());

/** The agent's messages in `ev`'s thread. */
const agentMessages = (ev: Event) => w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] });

async function metric(name: string): Promise<string> {
  const started = d.logs.find((l) => l.evt === "daemon.started")!;
  const text = await (await fetch(`${started.http as string}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(name))
    .join("\n");
}

test("a stop: wait gate whose command fails to start: the turn waits with one notice naming it, and ends ✅ once the gate is up and allows", async () => {
  const mark = d.logs.length;
  const ev = await w.owner.post("@agent ship the release", { channel: ch.back });
  await w.waitReaction(ev, "⏳", 60_000);
  const down = await d.waitLog((l) => l.evt === "gate.down" && d.logs.indexOf(l) >= mark, 30_000);
  assert.equal(down.gate, "approval");
  assert.equal(down.verdict, "object");
  const turn = down.turn;
  // Polls go on while it is down; it is still one notice, and no ✅.
  await d.waitLog((l) => l.evt === "gate.round" && String(l.turn) === String(turn) && (l.round as number) >= 3, 30_000);
  const waiting = await agentMessages(ev);
  const notes = waiting.filter(isProgressNote);
  assert.equal(notes.length, 1, "one notice while the gate is down");
  assert.match(notes[0]!.content, /gate 'approval', which is not running/);
  assert.match(notes[0]!.content, /!cancel/);
  const reactions = await w.query({ kinds: [KIND.reaction], authors: [w.agent.pk], "#e": [ev.id] });
  assert.ok(!reactions.some((r) => r.content === "✅"), "nothing approved the turn while the gate was down");
  assert.equal(d.logs.filter((l) => l.evt === "gate.down" && String(l.turn) === String(turn)).length, 1, "gate.down once per turn");
  assert.match(await metric("buzz_bridge_gate_down_total"), /buzz_bridge_gate_down_total\{gate="approval"\} 1/);

  writeFileSync(startFile, "");
  await w.waitReaction(ev, "✅", 90_000);
  const end = await d.waitLog((l) => l.evt === "turn.end" && String(l.turn) === String(turn), 30_000);
  assert.equal(end.status, "answered");
  assert.equal(rounds(d, mark, turn).at(-1)!.verdict, "allow", "the gate itself allowed, once it was up");
  const all = await agentMessages(ev);
  assert.equal(all.filter((e) => !isProgressNote(e)).length, 1, "one answer");
  assert.equal(all.filter(isProgressNote).length, 1, "and still the one notice");
});

test("a stop: wait gate that never starts: the turn waits until the owner's !cancel ends it", async () => {
  const mark = d.logs.length;
  const ev = await w.owner.post("@agent deploy to production", { channel: ch.never });
  await w.waitReaction(ev, "⏳", 60_000);
  const down = await d.waitLog((l) => l.evt === "gate.down" && d.logs.indexOf(l) >= mark && l.gate === "sentinel", 30_000);
  // Fail-closed is judged after polls of the down gate happened: a third round exists only if
  // the second (the first poll) did not let the turn end.
  await d.waitLog((l) => l.evt === "gate.round" && String(l.turn) === String(down.turn) && (l.round as number) >= 3, 30_000);
  const whileDown = await w.query({ kinds: [KIND.reaction], authors: [w.agent.pk], "#e": [ev.id] });
  assert.ok(!whileDown.some((r) => r.content === "✅"), "polls of a gate that is not running approved nothing");
  assert.equal(
    d.logs.some((l) => l.evt === "turn.end" && String(l.turn) === String(down.turn)),
    false,
    "the turn still waits",
  );
  const cancel = await w.owner.post("!cancel", { channel: ch.never });
  const [outcome] = await w.waitEvents({ kinds: [KIND.system], authors: [w.agent.pk], "#e": [cancel.id] }, (e) => e.length > 0);
  assert.equal(JSON.parse(outcome!.content).outcome, "cancelled");
  const end = await d.waitLog((l) => l.evt === "turn.end" && String(l.turn) === String(down.turn));
  assert.equal(end.status, "cancelled");
  const reactions = await w.query({ kinds: [KIND.reaction], authors: [w.agent.pk], "#e": [ev.id] });
  assert.ok(!reactions.some((r) => r.content === "✅"), "a gate that never ran approved nothing");
  const notes = (await agentMessages(ev)).filter(isProgressNote);
  assert.equal(notes.length, 1);
  assert.match(notes[0]!.content, /gate 'sentinel', which is not running/);
});
