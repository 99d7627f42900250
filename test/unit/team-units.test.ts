/**
 * A team in one process (docs/configuration.md "Several agents in one daemon"), its agents
 * never asked to run a turn: what the operator sees on the team's one HTTP endpoint (every
 * agent in /status.json, each agent's readiness checks and metrics under its id, the
 * process's own metrics once), which agents a reload starts, stops or leaves stopped, and
 * the state_dir lock and endpoint given back by stop. Agents answering through the team, and
 * team.max_concurrent: test/team-daemon.test.ts.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { nip19 } from "nostr-tools";
import { Team } from "../../src/app/daemon/team.js";
import { StateLock } from "../../src/app/daemon/state-lock.js";
import { loadTeam } from "../../src/config/load.js";
import { client, identity, mention, relayWith, type Identity } from "../fixtures/relay-helpers.js";
import { captureLogger, tempDir } from "../../kit/queue-helpers.js";
import { waitFor } from "../../kit/wait.js";

const cleanup: (() => unknown)[] = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

const owner = identity();
const agents = [identity(), identity(), identity()];
const id = (i: number) => agents[i]!.pk.slice(0, 16);

async function world() {
  const relay = await relayWith([owner, ...agents]);
  cleanup.push(() => relay.close());
  const channel = await relay.createChannel({ name: "team-room", type: "stream", members: [owner, ...agents].map((p) => p.pk) });
  const dir = tempDir("bb-team-units-");
  cleanup.push(() => dir.cleanup());
  const file = join(dir.dir, "team.yaml");
  /** Writes the team's config listing `members` (or, with `single`, one agent's config with no agents:). */
  const write = (members: Identity[], o: { single?: boolean; http?: boolean } = {}) => {
    const shared = {
      relay: { url: relay.url, presence: false },
      identity: { owner: nip19.npubEncode(owner.pk), ...(o.single ? { secret_key: nip19.nsecEncode(members[0]!.sk) } : {}) },
      // No agent process is ever started: no spare, and no turn is asked for.
      agent: { command: process.execPath, sandbox: "off", warm_spare: false },
      state_dir: join(dir.dir, "state"),
      ...(o.http === false ? {} : { http: { listen: "127.0.0.1:0" } }),
      shutdown_grace: "1s",
      // The agents never run here: no sandbox to start.
      ...(o.single ? {} : { team: { allow_unsandboxed: true } }),
    };
    const agentsKey = o.single ? {} : { agents: members.map((m) => ({ identity: { secret_key: nip19.nsecEncode(m.sk) } })) };
    writeFileSync(file, stringify({ ...shared, ...agentsKey }));
    chmodSync(file, 0o600);
  };
  return { relay, channel, file, write };
}

async function started(file: string) {
  const { logger, lines } = captureLogger("info");
  const team = new Team({ team: loadTeam(file), logger, configFile: file });
  cleanup.push(() => team.stop());
  await team.start();
  return { team, lines };
}

const get = async (url: string) => {
  const r = await fetch(url);
  return { status: r.status, text: await r.text() };
};

test("the team's endpoint shows every agent: /status.json lists them, /readyz has each one's checks under its id, /metrics labels each one's series", async () => {
  const w = await world();
  w.write(agents.slice(0, 2));
  const { team, lines } = await started(w.file);
  assert.deepEqual(team.ids, [id(0), id(1)]);
  assert.deepEqual(
    lines.filter((l) => l.evt === "team.started").map((l) => l.agents),
    [[id(0), id(1)]],
  );
  const url = team.httpUrl!;
  const status = JSON.parse((await get(`${url}/status.json`)).text) as { agents: { id: string }[] };
  assert.deepEqual(
    status.agents.map((a) => a.id),
    [id(0), id(1)],
  );
  assert.match((await get(`${url}/status`)).text, new RegExp(`${id(0)}[^]*${id(1)}`), "the status page shows both, in order");
  await waitFor(async () => (await get(`${url}/readyz`)).status === 200, { what: "both agents ready" });
  const ready = JSON.parse((await get(`${url}/readyz`)).text) as { checks: { name: string }[] };
  const owners = new Set(ready.checks.map((c) => c.name.split("/")[0]));
  assert.deepEqual([...owners], [id(0), id(1)], "every check named after its agent");
  assert.ok(
    ready.checks.some((c) => c.name === `${id(1)}/relay`),
    JSON.stringify(ready.checks),
  );
  const metrics = (await get(`${url}/metrics`)).text;
  for (const i of [0, 1])
    assert.match(metrics, new RegExp(`^buzz_bridge_[a-z_]+\\{[^}]*agent="${id(i)}"[^}]*\\} `, "m"), `agent ${i}'s series`);
  assert.deepEqual(
    metrics.match(/^process_resident_memory_bytes\b.*$/gm)?.map((l) => l.split(" ")[0]),
    ["process_resident_memory_bytes"],
    "the process's memory once, without an agent label",
  );
  for (const i of [0, 1]) assert.equal(team.daemon(id(i))!.httpUrl, undefined, `agent ${i} serves no endpoint of its own`);

  await team.stop();
  await assert.rejects(fetch(`${url}/healthz`), "the endpoint is closed");
  // The state_dir lock is given back: another team starts on it.
  const again = await started(w.file);
  assert.deepEqual(again.team.ids, [id(0), id(1)]);
  await again.team.stop();
});

test("a reload starts agents newly listed and stops those no longer listed; a file that does not load, or lists no agents, changes nothing", async () => {
  const w = await world();
  w.write(agents.slice(0, 2), { http: false });
  const { team, lines } = await started(w.file);
  assert.equal(team.httpUrl, undefined, "no http: no endpoint");
  w.write([agents[1]!, agents[2]!], { http: false });
  await team.reload();
  assert.deepEqual(team.ids, [id(1), id(2)]);
  assert.deepEqual(
    lines.filter((l) => l.evt === "team.agent_removed").map((l) => [l.agent, l.reason]),
    [[id(0), "reload"]],
  );
  assert.deepEqual(
    lines.filter((l) => l.evt === "team.agent_added").map((l) => l.agent),
    [id(2)],
  );

  writeFileSync(w.file, "agents: nope\n");
  await team.reload();
  assert.deepEqual(team.ids, [id(1), id(2)], "a file that does not load stops no one");
  assert.deepEqual(
    lines
      .filter((l) => l.evt === "config.reload_refused")
      .map((l) => l.agent)
      .sort(),
    [id(1), id(2)].sort(),
    "each running agent refuses it",
  );

  w.write([agents[0]!], { single: true, http: false });
  await team.reload();
  assert.deepEqual(team.ids, [id(1), id(2)], "a daemon started as a team stays one");
  const refused = lines.filter((l) => l.evt === "config.reload_refused" && l.agent === undefined);
  assert.equal(refused.length, 1);
  assert.match(
    refused[0]!.msg,
    /the config no longer lists agents: a daemon started as a team stays one; restart it to run a single agent/,
  );
  await team.stop();
});

test("an agent its owner stops (!shutdown) stops alone, stays stopped on a reload that lists it, and the team ends with its last agent", async () => {
  const w = await world();
  w.write(agents.slice(0, 2), { http: false });
  const { team, lines } = await started(w.file);
  const ownerClient = client(w.relay, owner);
  cleanup.push(() => ownerClient.stop());
  await ownerClient.start();
  let ended: string | undefined;
  void team.ended.then((why) => (ended = why));

  const { event: first } = await ownerClient.send(mention(w.channel, agents[1]!.pk, "!shutdown"));
  await waitFor(() => team.ids.length === 1, { what: "agent 1 to stop" });
  assert.deepEqual(team.ids, [id(0)]);
  assert.deepEqual(
    lines.filter((l) => l.evt === "team.agent_removed").map((l) => [l.agent, l.reason]),
    [[id(1), "!shutdown"]],
  );
  assert.equal(ended, undefined, "the team goes on");

  await team.reload();
  assert.deepEqual(team.ids, [id(0)], "still listed, still stopped");
  assert.deepEqual(
    lines.filter((l) => l.evt === "team.agent_stays_stopped").map((l) => [l.agent, l.reason]),
    [[id(1), "!shutdown"]],
  );
  // Dropped from the list, then listed again: it starts (once the stopped one has let go of its state_dir).
  await waitFor(() => lines.some((l) => l.evt === "daemon.stopped" && l.agent === id(1)), { what: "agent 1 to have stopped" });
  w.write([agents[0]!], { http: false });
  await team.reload();
  w.write(agents.slice(0, 2), { http: false });
  await team.reload();
  assert.deepEqual(team.ids, [id(0), id(1)], "listed again after being dropped: started");
  // Its owner's next command is for the agent once it listens again (its second start).
  await waitFor(() => lines.filter((l) => l.evt === "daemon.started" && l.agent === id(1)).length === 2, {
    what: "agent 1 listening again",
  });

  await ownerClient.send(mention(w.channel, agents[0]!.pk, "!shutdown"));
  // A second command, not the first one again: the same text and tags in the same second would be the same event.
  const again = mention(w.channel, agents[1]!.pk, "!shutdown");
  await ownerClient.send({ ...again, created_at: Math.max(again.created_at, first.created_at + 1) });
  await waitFor(() => ended !== undefined, {
    what: () =>
      `the team to end with its last agent; running: ${team.ids.join(", ")}; lines: ${JSON.stringify(lines.filter((l) => /control|gate|drop|shutdown|stopped|started/.test(String(l.evt))).map((l) => [l.agent, l.evt, l.reason ?? l.msg]))}`,
  });
  assert.equal(ended, "!shutdown");
  assert.deepEqual(team.ids, []);
  await team.stop();
});

test("an agent newly listed that cannot start is reported, and the others go on; a later reload starts it", async () => {
  const w = await world();
  w.write(agents.slice(0, 2), { http: false });
  const { team, lines } = await started(w.file);
  w.write(agents, { http: false });
  // Someone else holds the new agent's state_dir.
  const stateDir = loadTeam(w.file).members[2]!.config.state_dir;
  mkdirSync(stateDir, { recursive: true });
  const held = StateLock.acquire(stateDir);
  await team.reload();
  assert.deepEqual(team.ids, [id(0), id(1)], "the others run on, without it");
  const failed = lines.filter((l) => l.evt === "team.agent_failed");
  assert.deepEqual(
    failed.map((l) => l.agent),
    [id(2)],
  );
  assert.match(failed[0]!.msg, new RegExp(`^agent ${id(2)} could not start: state_dir .* is in use by another buzz-bridge daemon`));
  assert.match(String(failed[0]!.err), /is in use by another buzz-bridge daemon/);
  held.release();
  await team.reload();
  assert.deepEqual(team.ids, [id(0), id(1), id(2)]);
  await team.stop();
});
