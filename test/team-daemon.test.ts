/**
 * A team in one daemon (`agents:`, docs/configuration.md "Several agents in one daemon"):
 * three identities in one process on the dev relay, each answering its own mentions once
 * with its own key; `/metrics` per agent label; one agent's `!shutdown` stops it alone (a
 * reload that still lists it does not start it again); a reload adds a fourth that
 * answers; `team.max_concurrent` runs the agents' turns one after another (judged by the
 * log's order of turn starts and ends); `doctor` checks each agent.
 * Judged in the channel: who answered, how often, where.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { nip19, type Event } from "nostr-tools";
import { stringify } from "yaml";
import { World } from "../kit/world.js";
import { entries, teamAgents, teamShared } from "./fixtures/team.js";
import { runCli } from "./fixtures/cli.js";
import { waitFor } from "../kit/wait.js";
import { message } from "../src/nostr/events.js";
import { mentionSettled } from "../kit/settle.js";
import { answerProblems, parentOf } from "../kit/channel-oracle.js";

const worlds: World[] = [];
after(async () => {
  for (const w of worlds) await w.close();
});

test("three agents in one daemon each answer their own mentions once with their own key; !shutdown stops one; a reload adds a fourth", {
  timeout: 240_000,
}, async () => {
  const w = await World.create({ channelName: "team-room" });
  worlds.push(w);
  const agents = await teamAgents(w, 3);
  const id = (i: number) => agents[i]!.pk.slice(0, 16);
  const configOf = (n: number) => ({
    ...teamShared(w, { http: { listen: "127.0.0.1:0" }, relay: { presence: false } }),
    agents: entries(agents.slice(0, n)),
  });
  const file = join(w.dir, "team.yaml");
  writeFileSync(file, stringify(configOf(3)));
  const d = await w.startDaemon({}, { configFile: file, waitStarted: false });
  const started = await d.waitLog((l) => l.evt === "team.started");
  assert.deepEqual(started.agents, [id(0), id(1), id(2)]);
  const linesOf = (i: number) => d.logs.filter((l) => l.agent === id(i));

  const owner = await w.owner.relay();
  const mention = async (i: number, text: string): Promise<Event> => {
    const { event, outcome } = await owner.send(message(w.channel, text, { mentions: [agents[i]!.pk] }));
    assert.equal(outcome.status, "accepted");
    return event;
  };
  /** Once agent i's turn for ev has ended: exactly one reply, by agent i, in ev's thread; none by the others. */
  const answeredOnceBy = async (i: number, ev: Event) => {
    await waitFor(() => mentionSettled(linesOf(i), ev.id), { what: `agent ${i}'s turn for ${JSON.stringify(ev.content)} to end` });
    const replies = (await owner.query([{ kinds: [9], "#e": [ev.id] }])).filter((e) => parentOf(e) === ev.id);
    assert.deepEqual(
      replies.map((r) => r.pubkey),
      [agents[i]!.pk],
      `exactly one reply to ${JSON.stringify(ev.content)}, by agent ${i}`,
    );
    assert.deepEqual(answerProblems(ev, replies[0]!), []);
  };

  const asked = [await mention(0, "agent zero, status?"), await mention(1, "agent one, status?"), await mention(2, "agent two, status?")];
  for (const [i, ev] of asked.entries()) await answeredOnceBy(i, ev);

  // /metrics: each agent's series under its own label; the process's own metrics once.
  const http = String(d.logs.find((l) => l.evt === "http.listening")?.url);
  const metrics = await (await fetch(`${http}/metrics`)).text();
  for (let i = 0; i < 3; i++)
    assert.match(metrics, new RegExp(`^buzz_bridge_turns_total\\{[^}]*agent="${id(i)}"[^}]*\\} 1$`, "m"), `agent ${i}'s one turn`);
  assert.equal(metrics.match(/^process_resident_memory_bytes /gm)?.length, 1, "the process's memory once, without an agent label");
  const status = (await (await fetch(`${http}/status.json`)).json()) as { agents: { id: string }[] };
  assert.deepEqual(
    status.agents.map((a) => a.id),
    [id(0), id(1), id(2)],
  );

  // The owner stops agent 1 alone; agent 2 still answers.
  await mention(1, "!shutdown");
  await d.waitLog((l) => l.evt === "team.agent_removed" && l.agent === id(1));
  const later = await mention(2, "still there?");
  await answeredOnceBy(2, later);
  assert.equal(d.proc.exitCode, null, "the daemon runs on");

  // A reload that lists a fourth agent starts it; it answers with its own key. Agent 1,
  // still listed, stays stopped: its owner stopped it, as a daemon of one stays stopped.
  writeFileSync(file, stringify(configOf(4)));
  d.proc.kill("SIGHUP");
  await d.waitLog((l) => l.evt === "team.agent_added" && l.agent === id(3));
  const fourth = await mention(3, "welcome, agent three");
  await answeredOnceBy(3, fourth);
  assert.ok(d.logs.some((l) => l.evt === "team.agent_stays_stopped" && l.agent === id(1)));
  const running = (await (await fetch(`${http}/status.json`)).json()) as { agents: { id: string }[] };
  assert.deepEqual(
    running.agents.map((a) => a.id),
    [id(0), id(2), id(3)],
    "agent 1 was not started again",
  );

  // A file that no longer loads is refused by each running agent; each keeps running on what it had.
  writeFileSync(file, "agents: nope\n");
  d.proc.kill("SIGHUP");
  const refusedBy = () => d.logs.filter((l) => l.evt === "config.reload_refused").map((l) => String(l.agent));
  await waitFor(() => refusedBy().length >= 3, { what: "the running agents refusing the reload" });
  const after = await mention(0, "after the bad reload?");
  await answeredOnceBy(0, after);
  assert.deepEqual(refusedBy().sort(), [id(0), id(2), id(3)].sort(), "each running agent refused it once");
  assert.equal(await d.stop(), 0);
});

test("team.max_concurrent caps the turns of all agents together: with 1, the second agent's turn starts after the first's ended", {
  timeout: 120_000,
}, async () => {
  const w = await World.create({ channelName: "capped-room" });
  worlds.push(w);
  const agents = await teamAgents(w, 1);
  const file = join(w.dir, "capped.yaml");
  writeFileSync(
    file,
    stringify({ ...teamShared(w, { relay: { presence: false }, team: { max_concurrent: 1 } }), agents: entries(agents) }),
  );
  const d = await w.startDaemon({}, { configFile: file, waitStarted: false });
  await d.waitLog((l) => l.evt === "team.started");
  const owner = await w.owner.relay();
  const asked: Event[] = [];
  for (const a of agents) {
    const { event, outcome } = await owner.send(message(w.channel, "#slow 1500 take your time", { mentions: [a.pk] }));
    assert.equal(outcome.status, "accepted");
    asked.push(event);
  }
  const id = (i: number) => agents[i]!.pk.slice(0, 16);
  for (const [i, ev] of asked.entries())
    await waitFor(
      () =>
        mentionSettled(
          d.logs.filter((l) => l.agent === id(i)),
          ev.id,
        ),
      { what: `agent ${i}'s turn to end` },
    );
  for (const [i, ev] of asked.entries()) {
    const replies = (await owner.query([{ kinds: [9], "#e": [ev.id] }])).filter((e) => parentOf(e) === ev.id);
    assert.deepEqual(
      replies.map((r) => r.pubkey),
      [agents[i]!.pk],
    );
  }
  // In the daemon's log, in order: one turn starts, ends; only then the other starts.
  const turns = d.logs.filter((l) => l.evt === "turn.start" || l.evt === "turn.end").map((l) => `${l.evt} ${String(l.agent)}`);
  assert.equal(turns.length, 4, turns.join("\n"));
  assert.equal(turns[0]!.split(" ")[0], "turn.start");
  assert.equal(turns[1], turns[0]!.replace("turn.start", "turn.end"), `the first turn ends before any other starts:\n${turns.join("\n")}`);

  // doctor checks each agent in turn, under its own heading: its relay, its state in use by this daemon.
  const doctor = await runCli(["doctor", "-c", file, "--timeout", "20s"]);
  const sections = doctor.stdout.split(/^(?=agent [0-9a-f]{16} )/m).filter((x) => x.startsWith("agent "));
  assert.equal(sections.length, 2, doctor.stdout);
  for (const [i, section] of sections.entries()) {
    assert.match(section, new RegExp(`^agent ${id(i)} \\(${nip19.npubEncode(agents[i]!.pk)}\\), agents\\[${i}\\]\n`));
    assert.match(section, /^✓ relay\s/m, section);
    assert.match(
      section,
      new RegExp(`^✓ state\\s+\\S+/agents/${id(i)} is writable and in use by a running daemon \\(pid ${d.proc.pid}:`, "m"),
      section,
    );
  }
  assert.equal(await d.stop(), 0);
});

test("quotas are per key: a burst at one agent waits on that agent's frame budget alone; the other agent's answer waits for no slot, and the relay refuses no frame of either", {
  timeout: 120_000,
}, async () => {
  // The relay admits 40 frames per 5 s per key. An agent's start costs about 10 frames and one
  // answered mention about 11 more (measured): agent 1 stays clear of even the fifth of its
  // window kept back for replies (a 👀 or ✅ waits past 32). Agent 0's own budget is slower
  // than the relay's, 16 per 10 s, so that its start and three mentions (about 43 frames) wait
  // on it however fast or slow the machine runs them: not to wait they would have to spread over
  // more than 20 s, where three turns of the demo agent take a few.
  const quota = { frames: 40, windowMs: 5000 };
  const w = await World.create({ channelName: "quota-room", relayLimits: { frameQuota: quota } });
  worlds.push(w);
  const agents = await teamAgents(w, 1);
  const file = join(w.dir, "quota.yaml");
  const shared = teamShared(w, {
    http: { listen: "127.0.0.1:0" },
    relay: { presence: false, frame_quota: { frames: quota.frames, window: "5s" } },
    agent: { max_concurrent: 4 },
  });
  const [first, second] = entries(agents);
  const slow = { ...first, relay: { frame_quota: { frames: 16, window: "10s" } } };
  writeFileSync(file, stringify({ ...shared, agents: [slow, second] }));
  const d = await w.startDaemon({}, { configFile: file, waitStarted: false });
  await d.waitLog((l) => l.evt === "team.started");
  const id = (i: number) => agents[i]!.pk.slice(0, 16);
  const owner = await w.owner.relay();
  const send = async (i: number, text: string) => {
    const { event, outcome } = await owner.send(message(w.channel, text, { mentions: [agents[i]!.pk] }));
    assert.equal(outcome.status, "accepted");
    return { i, event };
  };
  const asked = await Promise.all(Array.from({ length: 3 }, (_, n) => send(0, `burst ${n} for agent zero`)));
  asked.push(await send(1, "one question for agent one"));
  for (const { i, event } of asked) {
    await waitFor(
      () =>
        mentionSettled(
          d.logs.filter((l) => l.agent === id(i)),
          event.id,
        ),
      { what: `agent ${i}'s turn to end` },
    );
    const replies = (await owner.query([{ kinds: [9], "#e": [event.id] }])).filter((e) => parentOf(e) === event.id);
    assert.deepEqual(
      replies.map((r) => r.pubkey),
      [agents[i]!.pk],
      `one reply to ${JSON.stringify(event.content)}, by agent ${i}`,
    );
  }
  for (const [i, a] of agents.entries()) assert.equal(w.relay.keyUsage(a.pk).refused, 0, `the relay refused none of agent ${i}'s frames`);
  const metrics = await (await fetch(`${String(d.logs.find((l) => l.evt === "http.listening")?.url)}/metrics`)).text();
  const waited = (i: number) =>
    Number(
      metrics.match(new RegExp(`^buzz_bridge_relay_frames_total\\{[^}]*outcome="waited"[^}]*agent="${id(i)}"[^}]*\\} (\\d+)$`, "m"))?.[1] ??
        0,
    );
  assert.ok(
    waited(0) > 0,
    `the burst waited on agent 0's budget (else this test shows nothing):\n${metrics.match(/^buzz_bridge_relay_frames_total.*$/gm)?.join("\n")}`,
  );
  assert.equal(waited(1), 0, "agent 1's frames never waited: agent 0's burst spent agent 0's quota, not agent 1's");
  assert.equal(await d.stop(), 0);
});
