/**
 * Owner commands in a fleet (docs/fleet.md, docs/architecture.md §3): two
 * daemons of one identity on one PostgreSQL database and the dev relay, both hearing every
 * command. Judged from the relay: one command outcome (kind 40099) for the fleet; `!cancel`
 * stops a thread's running turn on whichever daemon runs it (its turn ends cancelled, long
 * before the slow turn would end on its own; how soon is bench/fleet.ts's figure), and
 * nothing is answered for it; after `!rotate` the thread's next mention runs in a fresh agent session,
 * as the demo agent's `#session` report shows. Which daemon executes a command is the
 * fleet's race; the logs say which, and the assertions hold either way.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import type { DaemonProc, World } from "../kit/world.js";
import { useFleet } from "./fixtures/fleet.js";
import { waitFor } from "../kit/wait.js";
import { KIND } from "../src/nostr/kinds.js";

let w: World;
let daemons: DaemonProc[] = [];
const fleet = useFleet({
  channels: ["fleet-control-room"],
  setUp: async (f) => {
    w = f.w;
    if (f.skip) return;
    const { env } = await f.database();
    const configs = f.configs(2, () => ({
      agent: { max_concurrent: 2, session_scope: "thread", cancel_grace: "1s", idle_timeout: "90s" },
    }));
    daemons = await f.start(configs, env);
  },
});

type Log = Record<string, unknown>;
const inThread = (root: Event) => (l: Log) => String(l.scope ?? "").endsWith(root.id);
const outcomesOf = (cmd: Event) => w.query({ kinds: [KIND.system], authors: [w.agent.pk], "#e": [cmd.id] });

/** A daemon's decision on an owner command: it ran it (`gate.control`) or found another had (`gate.control_replayed`). */
const decidedOn = (d: DaemonProc, cmd: Event) =>
  d.logs.some((l) => (l.evt === "gate.control" || l.evt === "gate.control_replayed") && l.event === cmd.id);

/**
 * Exactly one outcome of the command from the fleet: once every daemon has decided on it
 * (so none can still publish one of its own) and the executor's outcome is stored.
 */
async function oneOutcome(cmd: Event): Promise<{ payload: Record<string, unknown> }> {
  await waitFor(() => daemons.every((d) => decidedOn(d, cmd)), { timeoutMs: 20_000, what: "every daemon's decision on the command" });
  await w.waitEvents({ kinds: [KIND.system], authors: [w.agent.pk], "#e": [cmd.id] }, (e) => e.length > 0);
  const all = await outcomesOf(cmd);
  assert.equal(all.length, 1, `one outcome for the fleet, got: ${all.map((e) => e.content).join(" | ")}`);
  return { payload: JSON.parse(all[0]!.content) as Record<string, unknown> };
}

/**
 * The thread's turn on `holder` ends, and ends cancelled, after the command was posted
 * (`since`: the length of the holder's log then): a `#slow 40000` turn the command did not
 * reach would end answered instead, so the order of the log lines is the evidence, not a
 * clock. How soon it stops is bench/fleet.ts's figure.
 */
async function stopsCancelled(holder: DaemonProc, root: Event, since: number): Promise<Record<string, unknown>> {
  const end = await holder.waitLog((l) => l.evt === "turn.end" && inThread(root)(l), 60_000);
  assert.ok(holder.logs.indexOf(end) >= since, "the turn was still running when the command was posted");
  assert.equal(end.status, "cancelled", `the thread's turn ended ${String(end.status)}, not cancelled`);
  return end;
}

const agentMessagesIn = async (root: Event) =>
  (await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [root.id] })).map((e) => e.content);

/** The daemon that executed the command (its `gate.control` line). */
function executor(cmd: Event): DaemonProc {
  const by = daemons.filter((d) => d.logs.some((l) => l.evt === "gate.control" && l.event === cmd.id));
  assert.equal(by.length, 1, "one daemon executed the command");
  return by[0]!;
}

/** The daemon whose agent runs the thread's first turn now (once the agent has its prompt). */
async function runningOn(root: Event): Promise<DaemonProc> {
  const holder = await Promise.any(
    daemons.map((d) => d.waitLog((l) => l.evt === "turn.session" && inThread(root)(l), 30_000).then(() => d)),
  ).catch((err: AggregateError) => {
    throw new Error(err.errors.map((e) => String(e)).join("\n---\n"));
  });
  const from = holder.logs.findIndex((l) => l.evt === "turn.session" && inThread(root)(l));
  await holder.waitLog((l) => holder.logs.indexOf(l) > from && l.evt === "agent.turn_start");
  return holder;
}

/** The demo agent's `#session` report in the reply to `mention`: its session id and how many prompts it has had. */
async function sessionOf(mention: Event): Promise<{ id: string; prompts: number }> {
  const reply = await w.waitReply(mention, 30_000);
  const m = /session: (\S+); prompts: (\d+)/.exec(reply.content);
  assert.ok(m, `a #session report in: ${reply.content}`);
  return { id: m[1]!, prompts: Number(m[2]) };
}

test("!cancel in a thread whose slow turn runs on one daemon of two: one outcome, the turn ends cancelled, nothing is answered", async (ctx) => {
  if (fleet.skip) return ctx.skip(fleet.skip);
  const root = await w.owner.post("@agent #slow 40000 a long job");
  const holder = await runningOn(root);
  const since = holder.logs.length;
  const cmd = await w.owner.post("!cancel", { replyTo: root });
  const { payload } = await oneOutcome(cmd);
  assert.match(String(payload.type), /cancel/);
  assert.equal(payload.actor, w.owner.pk);
  assert.equal(payload.target, w.agent.pk);
  ctx.diagnostic(executor(cmd) === holder ? "executed by the daemon running the turn" : "executed by the other daemon");
  await stopsCancelled(holder, root, since);
  await w.laterAnswer(); // a later mention answered and every turn ended: the thread is final
  assert.deepEqual(await agentMessagesIn(root), [], "no reply and no failure notice for the cancelled turn");
  assert.equal(daemons.flatMap((d) => d.logs.filter((l) => l.evt === "turn.end" && inThread(root)(l))).length, 1, "the turn ended once");
});

test("!rotate in a thread: one outcome, and the thread's next mention runs in a fresh agent session on whichever daemon takes it", async (ctx) => {
  if (fleet.skip) return ctx.skip(fleet.skip);
  const root = await w.owner.post("@agent #session first");
  const seen = [await sessionOf(root)];
  // Until both daemons have a session of the thread (a few tries; the fleet picks): then the
  // rotation must reach a daemon that did not execute it, whichever runs the thread next.
  const sessionsOf = (d: DaemonProc) => d.logs.filter((l) => l.evt === "turn.session" && inThread(root)(l)).length;
  for (let i = 0; i < 8 && !daemons.every((d) => sessionsOf(d) > 0); i++) {
    seen.push(await sessionOf(await w.owner.post(`@agent #session again ${i}`, { replyTo: root })));
  }
  ctx.diagnostic(`daemons with a session of the thread before !rotate: ${daemons.filter((d) => sessionsOf(d) > 0).length}`);
  assert.ok(
    seen.some((s) => s.prompts > 1) || daemons.every((d) => sessionsOf(d) > 0),
    "sessions carry over between turns without a rotation",
  );

  const cmd = await w.owner.post("!rotate", { replyTo: root });
  const { payload } = await oneOutcome(cmd);
  assert.match(String(payload.type), /rotate/);
  const before = daemons.map(sessionsOf);
  const next = await sessionOf(await w.owner.post("@agent #session after the rotation", { replyTo: root }));
  assert.equal(next.prompts, 1, "the first prompt of its session");
  assert.ok(!seen.some((s) => s.id === next.id), `a session id not seen in the thread before (${next.id})`);
  assert.equal(
    daemons.map(sessionsOf).reduce((a, b) => a + b, 0),
    before.reduce((a, b) => a + b, 0) + 1,
    "one new agent session was opened for the thread",
  );
});

test("a top-level !cancel while both daemons run turns in the channel: one outcome, and each daemon stops its turns", async (ctx) => {
  if (fleet.skip) return ctx.skip(fleet.skip);
  // Four slow threads, two turn slots per daemon: each daemon runs two of them, so the
  // command is executed by one daemon and must reach the other's turns through the database.
  const roots: Event[] = [];
  for (let i = 0; i < 4; i++) roots.push(await w.owner.post(`@agent #slow 40000 job ${i}`));
  const holders = await Promise.all(roots.map(runningOn));
  assert.equal(new Set(holders).size, 2, "both daemons run turns");
  const since = holders.map((h) => h.logs.length);
  const cmd = await w.owner.post("!cancel");
  const { payload } = await oneOutcome(cmd);
  assert.match(String(payload.type), /cancel/);
  const by = executor(cmd);
  await Promise.all(roots.map((root, i) => stopsCancelled(holders[i]!, root, since[i]!)));
  assert.ok(
    holders.some((h) => h !== by),
    "a turn of the daemon that did not execute the command was stopped",
  );
  await w.laterAnswer(); // a later mention answered and every turn ended: the threads are final
  assert.deepEqual(await Promise.all(roots.map(agentMessagesIn)), [[], [], [], []], "no reply and no failure notice in any thread");
});
