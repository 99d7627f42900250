/**
 * A daemon of one agent becoming a team (docs/configuration.md "Moving an agent into a
 * team"): a mention accepted by the single daemon and interrupted by its stop is answered,
 * once, by that agent once the same state directory runs a team — its queue moved to
 * `state_dir/agents/<id>` — though the mention is older than a fresh queue would replay.
 * A queue of no agent of the team is left where it is, and said so.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { World } from "../kit/world.js";
import { entries, teamAgents, teamShared } from "./fixtures/team.js";
import { waitFor } from "../kit/wait.js";
import { mentionSettled } from "../kit/settle.js";
import { answerProblems, parentOf } from "../kit/channel-oracle.js";
import { KIND } from "../src/nostr/kinds.js";

const worlds: World[] = [];
after(async () => {
  for (const w of worlds) await w.close();
});

test("a single agent's interrupted mention is answered once by that agent after its state_dir becomes a team's", {
  timeout: 120_000,
}, async () => {
  const w = await World.create({ channelName: "move-room" });
  worlds.push(w);
  const stateDir = join(w.dir, "moving-state");
  const single = w.writeConfig({ state_dir: stateDir, shutdown_grace: "1s", relay: { presence: false } }, "single.yaml");
  const first = await w.startDaemon({}, { configFile: single });
  // Held past the SIGTERM; let go before the team starts, so the turn that runs again can end.
  const release = join(w.dir, "release-move");
  const ev = await w.owner.post(`@agent #hold ${release} summarise the incident`);
  await w.waitReaction(ev, "👀");
  assert.equal(await first.stop("SIGTERM"), 0);
  assert.equal(first.logs.find((l) => l.evt === "daemon.turns_requeued")?.count, 1, "the turn was left to run again");
  writeFileSync(release, "");
  // Older than the replay a fresh queue starts from (its start, less a few seconds): only the moved queue still has it.
  await waitFor(() => Date.now() / 1000 > ev.created_at + 7, { timeoutMs: 15_000, what: "the mention to be older than a fresh replay" });

  const agents = await teamAgents(w, 1);
  const id = agents[0]!.pk.slice(0, 16);
  const team = join(w.dir, "team.yaml");
  writeFileSync(
    team,
    stringify({ ...teamShared(w, { state_dir: stateDir, shutdown_grace: "1s", relay: { presence: false } }), agents: entries(agents) }),
  );
  const d = await w.startDaemon({}, { configFile: team, waitStarted: false });
  const moved = await d.waitLog((l) => l.evt === "team.state_moved");
  assert.equal(moved.agent, id);
  assert.ok((moved.moved as string[]).includes("queue.db"), JSON.stringify(moved));
  assert.ok(existsSync(join(stateDir, "agents", id, "queue.db")));

  await waitFor(
    () =>
      mentionSettled(
        d.logs.filter((l) => l.agent === id),
        ev.id,
      ),
    { timeoutMs: 60_000, what: "the moved mention's turn to end" },
  );
  const replies = (await w.query({ kinds: [KIND.message], "#e": [ev.id] })).filter((e) => parentOf(e) === ev.id);
  assert.deepEqual(
    replies.map((r) => r.pubkey),
    [agents[0]!.pk],
    "one answer, by the agent the mention was for",
  );
  assert.deepEqual(answerProblems(ev, replies[0]!), []);
  assert.equal(await d.stop(), 0);
});

test("a team on a state_dir holding a queue of none of its agents leaves it there and says so", { timeout: 60_000 }, async () => {
  const w = await World.create({ channelName: "left-room" });
  worlds.push(w);
  const stateDir = join(w.dir, "other-state");
  const single = w.writeConfig({ state_dir: stateDir, relay: { presence: false } }, "single.yaml");
  const first = await w.startDaemon({}, { configFile: single });
  assert.equal(await first.stop(), 0);
  // A team of two agents that are not the one whose queue this is.
  const agents = (await teamAgents(w, 2)).slice(1);
  const team = join(w.dir, "team.yaml");
  writeFileSync(team, stringify({ ...teamShared(w, { state_dir: stateDir, relay: { presence: false } }), agents: entries(agents) }));
  const d = await w.startDaemon({}, { configFile: team, waitStarted: false });
  const left = await d.waitLog((l) => l.evt === "team.state_left");
  assert.equal(left.identity, w.agent.pk);
  assert.match(
    String(left.msg),
    /no agent of this team takes over: its identity \([0-9a-f]{64}\) is none of the team's agents; move it by hand/,
  );
  assert.ok(existsSync(join(stateDir, "queue.db")), "the queue stays where it was");
  await d.waitLog((l) => l.evt === "team.started");
  assert.equal(await d.stop(), 0);
});
