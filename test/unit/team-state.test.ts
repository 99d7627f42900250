/**
 * A single agent's state_dir becoming a team's (docs/configuration.md "Moving an agent into a
 * team"): its queue, WAL, sandbox HOMEs and default working directories move to
 * `agents/<id>` for the agent whose queue it is; a queue of no agent of the team, or of one
 * that has a queue already, stays where it was and the warning says why. Judged by the files
 * where they end up and the warning an operator reads. The daemon around it:
 * test/team-move.test.ts.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateSecretKey, getPublicKey, nip19 } from "nostr-tools";
import { adoptSingleAgentState } from "../../src/app/daemon/team-state.js";
import { loadTeamText } from "../../src/config/load.js";
import { SqliteStore } from "../../src/queue/index.js";
import { captureLogger, tempDir } from "../../kit/queue-helpers.js";

const keys = [0, 1].map(() => generateSecretKey());
const pk = keys.map((k) => getPublicKey(k));
const id = pk.map((p) => p.slice(0, 16));
const owner = nip19.npubEncode(getPublicKey(generateSecretKey()));

const dirs: { cleanup(): void }[] = [];
after(() => {
  for (const d of dirs) d.cleanup();
});

/** A state_dir as a single agent left it: its queue (noting `identity` unless undefined), HOMEs and working directories. */
async function singleAgentDir(identity: string | undefined): Promise<string> {
  const t = tempDir("bb-team-state-");
  dirs.push(t);
  const store = SqliteStore.open(t.dir);
  if (identity) store.noteIdentity(identity);
  await store.close();
  mkdirSync(join(t.dir, "homes", "c1"), { recursive: true });
  writeFileSync(join(t.dir, "homes", "c1", "notes"), "home of channel c1");
  mkdirSync(join(t.dir, "work", "c1"), { recursive: true });
  writeFileSync(join(t.dir, "work", "c1", "draft.md"), "work in channel c1");
  return t.dir;
}

/** The team of both agents on `stateDir`; `entry0` adds keys to the first agent's entry. */
function team(stateDir: string, entry0 = "", backend = "") {
  const state = backend ? `state:\n  backend: ${backend}\n  url: postgres://db.internal/bb\n` : "";
  const text = `relay:\n  url: ws://127.0.0.1:7777\nidentity:\n  owner: ${owner}\nstate_dir: ${stateDir}\n${state}agent:\n  command: demo-agent\nagents:\n  - identity:\n      secret_key: ${nip19.nsecEncode(keys[0]!)}\n${entry0}  - identity:\n      secret_key: ${nip19.nsecEncode(keys[1]!)}\n`;
  return loadTeamText(text, join(stateDir, "team.yaml"), {});
}

test("the agent whose queue it is takes it over: queue, HOMEs and default working directories move to agents/<id>", async () => {
  const dir = await singleAgentDir(pk[1]);
  const { logger, lines } = captureLogger();
  adoptSingleAgentState(team(dir), logger);
  const own = join(dir, "agents", id[1]!);
  assert.equal(SqliteStore.identityIn(own), pk[1], "the moved queue is the agent's");
  assert.equal(existsSync(join(dir, "queue.db")), false, "no queue left behind");
  assert.equal(readFileSync(join(own, "homes", "c1", "notes"), "utf8"), "home of channel c1");
  assert.equal(readFileSync(join(own, "work", "c1", "draft.md"), "utf8"), "work in channel c1");
  assert.equal(existsSync(join(dir, "agents", id[0]!)), false, "the other agent gets nothing");
  const moved = lines.filter((l) => l.evt === "team.state_moved");
  assert.equal(moved.length, 1);
  assert.equal(moved[0]!.agent, id[1]);
  assert.deepEqual(
    (moved[0]!.moved as string[]).filter((n) => !n.startsWith("queue.db-")),
    ["queue.db", "homes", "work"],
  );
  assert.equal(lines.filter((l) => l.evt === "team.state_left").length, 0);
});

test("an agent working elsewhere (agent.cwd of its own) leaves the old working directories where they are", async () => {
  for (const cwd of ["/srv/elsewhere/{channel}", "{own}/checkout/{channel}"]) {
    const dir = await singleAgentDir(pk[0]);
    const own = join(dir, "agents", id[0]!);
    const { logger } = captureLogger();
    adoptSingleAgentState(team(dir, `    agent:\n      cwd: ${cwd.replace("{own}", own)}\n`), logger);
    assert.equal(SqliteStore.identityIn(own), pk[0]);
    assert.ok(existsSync(join(own, "homes", "c1", "notes")), "HOMEs move all the same");
    assert.equal(readFileSync(join(dir, "work", "c1", "draft.md"), "utf8"), "work in channel c1", cwd);
    assert.equal(existsSync(join(own, "work")), false, cwd);
  }
});

test("a queue of none of the team's agents, or one that does not say whose it is, stays and the warning says why", async () => {
  const cases = [
    { identity: getPublicKey(generateSecretKey()), why: /its identity \([0-9a-f]{64}\) is none of the team's agents; move it by hand/ },
    { identity: undefined, why: /: it does not say whose it is; move it by hand/ },
  ];
  for (const c of cases) {
    const dir = await singleAgentDir(c.identity);
    const { logger, lines } = captureLogger();
    adoptSingleAgentState(team(dir), logger);
    assert.equal(SqliteStore.identityIn(dir), c.identity, "the queue stays where it was");
    assert.equal(existsSync(join(dir, "agents")), false, "nothing moved");
    const left = lines.filter((l) => l.evt === "team.state_left");
    assert.equal(left.length, 1);
    assert.equal(left[0]!.file, join(dir, "queue.db"));
    assert.equal(left[0]!.identity, c.identity ?? null);
    assert.match(left[0]!.msg, c.why);
    assert.equal(lines.filter((l) => l.evt === "team.state_moved").length, 0);
  }
});

test("an agent that has a queue of its own already keeps it, and the old one stays where it was", async () => {
  const dir = await singleAgentDir(pk[0]);
  const own = join(dir, "agents", id[0]!);
  const theirs = SqliteStore.open(own);
  theirs.noteIdentity(pk[0]!);
  await theirs.close();
  writeFileSync(join(dir, "homes", "c1", "notes"), "the old home");
  const { logger, lines } = captureLogger();
  adoptSingleAgentState(team(dir), logger);
  assert.equal(SqliteStore.identityIn(dir), pk[0], "the old queue stays");
  assert.equal(existsSync(join(own, "homes")), false, "nothing else moves either");
  const left = lines.filter((l) => l.evt === "team.state_left");
  assert.equal(left.length, 1);
  assert.match(left[0]!.msg, new RegExp(`agent ${id[0]} has a queue of its own already \\(${join(own, "queue.db")}\\)`));
});

test("a state_dir without a queue, or a team whose queue is PostgreSQL, is not touched", async () => {
  const empty = tempDir("bb-team-state-");
  dirs.push(empty);
  const { logger, lines } = captureLogger();
  adoptSingleAgentState(team(empty.dir), logger);
  assert.equal(existsSync(join(empty.dir, "agents")), false);

  const dir = await singleAgentDir(pk[0]);
  adoptSingleAgentState(team(dir, "", "postgres"), logger);
  assert.equal(SqliteStore.identityIn(dir), pk[0], "a PostgreSQL team leaves the file alone");
  assert.equal(existsSync(join(dir, "agents")), false);
  assert.deepEqual(
    lines.map((l) => l.evt),
    [],
    "and says nothing of it",
  );
});
