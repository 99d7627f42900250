/**
 * A fleet of teams (docs/configuration.md "Several agents in one daemon", docs/fleet.md):
 * two daemons run the same team of two agents on one PostgreSQL database, each agent a
 * fleet of its own (its schema, its leases). Mentions of both agents over two channels,
 * a stranger's denied mentions, and one daemon stopped mid-stream: judged in the channel,
 * every mention has exactly one reply, by the agent it mentions, to it, in its thread,
 * quoting it; the other agent says nothing there; each denied mention has one 🔒.
 * Without the fleet (each daemon on its own queue) every mention would be answered twice.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { stringify } from "yaml";
import { useFleet } from "./fixtures/fleet.js";
import { entries, teamAgents, teamShared, type TeamAgent } from "./fixtures/team.js";
import { waitFor } from "../kit/wait.js";
import { mentionSettled } from "../kit/settle.js";
import { answerProblems, marker, parentOf } from "../kit/channel-oracle.js";
import { KIND } from "../src/nostr/kinds.js";
import type { DaemonProc } from "../kit/world.js";

const fleet = useFleet({ channels: ["crew-0", "crew-1"] });

test("two daemons of one team on PostgreSQL: each agent's mentions answered once, by it, through a daemon's stop", {
  timeout: 200_000,
}, async (ctx) => {
  if (fleet.skip) return ctx.skip(fleet.skip);
  const { w, channels } = fleet;
  const { env } = await fleet.database();
  const agents = await teamAgents(w, 1);
  for (const a of agents.slice(1)) await w.relay.addMember(channels[1]!, a.pk);
  const id = (a: TeamAgent) => a.pk.slice(0, 16);
  const configs = [0, 1].map((n) => {
    const file = join(w.dir, `team-fleet-${n}.yaml`);
    const shared = teamShared(w, {
      state_dir: join(w.dir, `team-state-${n}`),
      state: { backend: "postgres", url: "${BUZZ_BRIDGE_DATABASE_URL}" },
      agent: { session_scope: "thread", max_concurrent: 2 },
      // Each agent's key is shared by the two daemons at the relay: each takes half (docs/fleet.md).
      relay: { presence: false, frame_quota: { share: 0.5 } },
      log: { level: "info" },
    });
    writeFileSync(file, stringify({ ...shared, agents: entries(agents) }));
    return file;
  });
  const daemons: DaemonProc[] = [];
  for (const configFile of configs) {
    const d = await w.startDaemon({}, { configFile, env, waitStarted: false });
    await d.waitLog((l) => l.evt === "team.started");
    daemons.push(d);
  }
  const [a, b] = daemons as [DaemonProc, DaemonProc];

  const asked: { ev: Event; by: TeamAgent; marker: string }[] = [];
  const denied: { ev: Event; of: TeamAgent }[] = [];
  const mention = async (person: typeof w.owner, of: TeamAgent, text: string, channel: string) =>
    person.post(text, { mention: false, tags: [["p", of.pk]], channel });
  const post = async (i: number) => {
    const by = agents[i % 2]!;
    const m = marker();
    asked.push({ ev: await mention(w.owner, by, `${m} crew question ${i} #slow 400`, channels[Math.floor(i / 2) % 2]!), by, marker: m });
  };
  for (let i = 0; i < 6; i++) await post(i);
  for (const of of agents) denied.push({ ev: await mention(w.stranger, of, "let me in", channels[0]!), of });
  // b stops once the fleet runs turns: its scopes are handed over, and what it held is answered by a.
  await waitFor(() => daemons.some((d) => d.logs.some((l) => l.evt === "turn.start")), { timeoutMs: 30_000, what: "a turn to start" });
  assert.equal(await b.stop(), 0);
  for (let i = 6; i < 12; i++) await post(i);

  const logsOf = (of: TeamAgent) => daemons.flatMap((d) => d.logs.filter((l) => l.agent === id(of)));
  await waitFor(() => asked.every((x) => mentionSettled(logsOf(x.by), x.ev.id)), {
    timeoutMs: 150_000,
    what: () => `every mention's turn to end (${asked.filter((x) => !mentionSettled(logsOf(x.by), x.ev.id)).length} open)`,
  });
  const owner = await w.owner.relay();
  const problems: string[] = [];
  for (const x of asked) {
    const replies = (await owner.query([{ kinds: [KIND.message], "#e": [x.ev.id] }])).filter((e) => parentOf(e) === x.ev.id);
    const who = replies.map((r) => (r.pubkey === x.by.pk ? "its agent" : r.pubkey === w.owner.pk ? "the owner" : "another"));
    if (replies.length !== 1 || who[0] !== "its agent")
      problems.push(`${x.marker}: replies by ${JSON.stringify(who)}, expected one by its agent`);
    for (const r of replies) {
      problems.push(...answerProblems(x.ev, r).map((p) => `${x.marker}: ${p}`));
      if (!r.content.includes(x.marker))
        problems.push(`${x.marker}: the reply does not quote it: ${JSON.stringify(r.content.slice(0, 80))}`);
    }
  }
  assert.deepEqual(problems, []);

  // A later answer from the survivor, then the 🔒s: one per denied mention, by its own agent.
  const later = await mention(w.owner, agents[0]!, "a later question", channels[0]!);
  await waitFor(() => mentionSettled(logsOf(agents[0]!), later.id), { timeoutMs: 60_000, what: "the later question's turn to end" });
  const locks = await owner.query([{ kinds: [KIND.reaction], "#e": denied.map((d) => d.ev.id) }]);
  assert.deepEqual(
    denied.map((d) =>
      locks.filter((l) => l.tags.some((t) => t[0] === "e" && t[1] === d.ev.id)).map((l) => [l.pubkey === d.of.pk, l.content]),
    ),
    denied.map(() => [[true, "🔒"]]),
    "each denied mention has one 🔒, from the agent it mentioned",
  );
  assert.equal(await a.stop(), 0);
});
