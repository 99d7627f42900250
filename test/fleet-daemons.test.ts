/**
 * Fleet mode: three daemons of one identity share one PostgreSQL database and the dev
 * relay. 60 mentions over 6 channels in thread scope, every fourth inside an existing
 * thread (a reply to the agent's reply); mid-stream one daemon is SIGKILLed while it runs
 * turns, another is stopped and started again. Judged from the relay as a person would
 * (the channel oracle): every mention has exactly one agent reply, to it, in its thread
 * and channel, quoting it — nothing else; the killed daemon's scopes were taken over by the survivors; a stranger's
 * denied mentions got one 🔒 each and an owner command one outcome, not one per daemon.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import type { DaemonProc } from "../kit/world.js";
import { useFleet } from "./fixtures/fleet.js";
import { leakedSecrets } from "../kit/reliability-helpers.js";
import { ask, askInThread, assertAnsweredOnce, type Asked } from "../kit/channel-oracle.js";
import { KIND } from "../src/nostr/kinds.js";
import { sleep, waitFor } from "../kit/wait.js";

const CHANNELS = 6;
const MENTIONS = 60;

const fleet = useFleet({ channels: Array.from({ length: CHANNELS }, (_, i) => `room-${i}`) });

test(`three daemons, one identity: ${MENTIONS} mentions over ${CHANNELS} channels answered exactly once through a SIGKILL and a restart`, {
  // A safety net, not a target (the answers are awaited on evidence, within 120 s): idle, a
  // slow two-core machine takes about 170 s for the whole test.
  timeout: 300_000,
}, async (ctx) => {
  if (fleet.skip) return ctx.skip(fleet.skip);
  const { w, channels, server } = fleet;
  const { env } = await fleet.database();
  const configs = fleet.configs(3, () => ({ agent: { max_concurrent: 3, session_scope: "thread" }, log: { level: "info" } }));
  const [a, b, c] = (await fleet.start(configs, env)) as [DaemonProc, DaemonProc, DaemonProc];

  const asked: Asked[] = [];
  const denied: Event[] = [];
  const post = async (i: number) => {
    const channel = channels[i % CHANNELS]!;
    const text = `ping m${i} #slow 1200`;
    asked.push(i % 4 === 3 ? await askInThread(w, w.owner, text, { channel, asked }) : await ask(w.owner, text, { channel }));
    await sleep(60); // paced: a burst is another test
  };
  for (let i = 0; i < 20; i++) await post(i);
  // Kill b while it runs turns: its leases must expire and its scopes move to a and c.
  await b.waitLog((l) => l.evt === "turn.session", 30_000);
  b.proc.kill("SIGKILL");
  await b.exited;
  for (let i = 20; i < 40; i++) {
    await post(i);
    if (i % 7 === 0) denied.push(await w.stranger.post(`@agent let me in ${i}`, { channel: channels[(i / 7) % CHANNELS] }));
  }
  // Stop c gracefully (its leases end at once) and start it again on the same config.
  assert.equal(await c.stop(), 0);
  const c2 = await w.startDaemon({}, { configFile: configs[2]!, env });
  for (let i = 40; i < MENTIONS; i++) await post(i);

  const { notices } = await assertAnsweredOnce(w, asked, { timeoutMs: 120_000 });
  assert.equal(notices, 0, "a daemon's death is not an agent failure");

  const bId = `/${b.proc.pid}/`;
  const takeovers = [a, c, c2].flatMap((d) => d.logs.filter((l) => l.evt === "queue.scope_taken_over" && String(l.from).includes(bId)));
  assert.ok(takeovers.length > 0, "the killed daemon's scopes were taken over by a survivor");

  const locks = await w.query({ kinds: [KIND.reaction], authors: [w.agent.pk], "#e": denied.map((d) => d.id), limit: 100 });
  assert.deepEqual(
    denied.map((d) => locks.filter((l) => l.tags.some((t) => t[0] === "e" && t[1] === d.id)).length),
    denied.map(() => 1),
    "each denied mention got one 🔒 from the fleet",
  );

  // An owner command is executed by one daemon of the fleet: one outcome, not three.
  const cmd = await w.owner.post("!status", { channel: channels[0] });
  // Every running daemon decided on it (ran it, or found it claimed): none can still answer it.
  const decided = (d: DaemonProc) =>
    d.logs.some((l) => (l.evt === "gate.control" || l.evt === "gate.control_replayed") && l.event === cmd.id);
  await waitFor(() => [a, c2].every(decided), { timeoutMs: 20_000, what: "both running daemons' decision on the command" });
  await w.waitEvents({ kinds: [KIND.system], authors: [w.agent.pk], "#e": [cmd.id] }, (e) => e.length > 0);
  const outcomes = await w.query({ kinds: [KIND.system], authors: [w.agent.pk], "#e": [cmd.id] });
  assert.equal(outcomes.length, 1, "one !status outcome for the fleet");
  assert.match(outcomes[0]!.content, /"type":"control.status"/);

  const raw = [a, b, c, c2].map((d) => d.raw()).join("\n");
  assert.ok(!raw.includes(server!.password), "the database password is in no daemon's output");
  assert.deepEqual(leakedSecrets(raw, [w.agent, w.owner, w.teammate, w.stranger]), []);
  await Promise.all([a.stop(), c2.stop()]);
});
