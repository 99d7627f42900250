/**
 * `agents:` — several agents in one daemon (docs/configuration.md "Several agents in one
 * daemon"): each entry over the shared keys, each problem where it is written, and what only
 * a team can get wrong (one key twice, one working directory, two agents answering one
 * message) refused naming both. `check` printing a team: test/config-agents.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateSecretKey, getPublicKey, nip19 } from "nostr-tools";
import { ConfigError, loadConfigText, loadTeamText } from "../../src/config/load.js";

const keys = [0, 1, 2].map(() => generateSecretKey());
const nsec = keys.map((k) => nip19.nsecEncode(k));
const pk = keys.map((k) => getPublicKey(k));
const owner = nip19.npubEncode(getPublicKey(generateSecretKey()));
const CH = ["11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"];

const shared = `relay:\n  url: ws://127.0.0.1:7777\nidentity:\n  owner: ${owner}\nstate_dir: /tmp/team-state\nagent:\n  max_concurrent: 3\n  command: demo-agent\ndefaults:\n  respond_to: owner-only\n`;

function problemsOf(text: string): string[] {
  try {
    loadTeamText(text, "/etc/bb/team.yaml", {});
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    return err.message.split("\n");
  }
  assert.fail("config was accepted");
}

test("each entry is laid over the shared keys: mappings key by key, lists and values whole; state under agents/<id>", () => {
  const team = loadTeamText(
    `${shared}channels:\n  - id: "${CH[0]}"\nagents:\n  - identity:\n      secret_key: ${nsec[0]}\n  - identity:\n      secret_key: ${nsec[1]}\n    agent:\n      max_concurrent: 1\n      cwd: /srv/reviewer/{channel}\n    channels:\n      - id: "${CH[1]}"\n        respond_to: anyone\n`,
    "/etc/bb/team.yaml",
    {},
  );
  assert.equal(team.stateDir, "/tmp/team-state");
  const [a, b] = team.members;
  assert.deepEqual([a!.pubkey, b!.pubkey], [pk[0], pk[1]]);
  assert.deepEqual([a!.team!.id, b!.team!.id], [pk[0]!.slice(0, 16), pk[1]!.slice(0, 16)]);
  // agent: overlaid key by key — the entry's max_concurrent, the shared command.
  assert.equal(a!.config.agent.max_concurrent, 3);
  assert.equal(b!.config.agent.max_concurrent, 1);
  assert.equal(b!.config.agent.command, "demo-agent");
  // The owner comes from the shared identity; the key from the entry.
  assert.equal(b!.config.identity.owner, nip19.decode(owner).data);
  // channels: a list, replaced whole.
  assert.deepEqual(
    a!.config.channels.map((c) => c.id),
    [CH[0]],
  );
  assert.deepEqual(
    b!.config.channels.map((c) => [c.id, c.respond_to]),
    [[CH[1], "anyone"]],
  );
  // Each agent's state in its own directory; its work there unless its entry says.
  assert.equal(a!.config.state_dir, join("/tmp/team-state", "agents", pk[0]!.slice(0, 16)));
  assert.equal(a!.config.agent.cwd, join("/tmp/team-state", "agents", pk[0]!.slice(0, 16), "work", "{channel}"));
  assert.equal(b!.config.agent.cwd, "/srv/reviewer/{channel}");
});

test("an entry's secret_key replaces a shared secret_key_file (one of a pair)", () => {
  const team = loadTeamText(
    `${shared.replace("identity:\n", "identity:\n  secret_key_file: /nonexistent/agent.nsec\n")}agents:\n  - identity:\n      secret_key: ${nsec[0]}\n`,
    "/etc/bb/team.yaml",
    {},
  );
  assert.equal(team.members[0]!.pubkey, pk[0]);
});

test("a config without agents: is a team of its one agent, loaded as before", () => {
  const text = `${shared.replace("identity:\n", `identity:\n  secret_key: ${nsec[0]}\n`)}`;
  const team = loadTeamText(text, "/etc/bb/one.yaml", {});
  assert.equal(team.members.length, 1);
  assert.equal(team.members[0]!.team, undefined);
  assert.equal(team.members[0]!.config.state_dir, "/tmp/team-state");
  assert.equal(team.stateDir, "/tmp/team-state");
  assert.equal(loadConfigText(text, "/etc/bb/one.yaml", {}).pubkey, pk[0]);
});

test("a command that takes one agent's config refuses a team's, saying which commands take it", () => {
  try {
    loadConfigText(`${shared}agents:\n  - identity:\n      secret_key: ${nsec[0]}\n`, "/etc/bb/team.yaml", {});
    assert.fail("accepted");
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    assert.match(
      err.message,
      /^\/etc\/bb\/team\.yaml:\d+:1: agents: this config runs 1 agent in one daemon \(agents:\); `run`, `check`, `doctor` and `tail --agent ID` take it, this command takes the config of one agent$/,
    );
  }
});

test("a problem is reported where it is written: in the entry, or at the shared key for the agent that takes it", () => {
  const text = `${shared.replace("  max_concurrent: 3", "  max_concurrent: lots")}agents:\n  - identity:\n      secret_key: ${nsec[0]}\n  - identity:\n      secret_key: ${nsec[1]}\n    defaults:\n      respond_to: everyone\n`;
  const problems = problemsOf(text);
  const lines = text.split("\n");
  const lineOf = (needle: string) => lines.findIndex((l) => l.includes(needle)) + 1;
  assert.ok(
    problems.some(
      (p) => p.startsWith(`/etc/bb/team.yaml:${lineOf("respond_to: everyone")}:`) && p.includes("agents[1].defaults.respond_to:"),
    ),
    problems.join("\n"),
  );
  // The shared max_concurrent is wrong for both agents: said once, at its line, naming the first that takes it.
  const shared_ = problems.filter((p) => p.startsWith(`/etc/bb/team.yaml:${lineOf("max_concurrent: lots")}:`));
  assert.equal(shared_.length, 1, problems.join("\n"));
  assert.match(shared_[0]!, /agent\.max_concurrent \(for agents\[0\], which takes it from the shared keys\): /);
});

test("the daemon's own keys inside an entry are refused, saying to set them at the top level", () => {
  const problems = problemsOf(
    `${shared}agents:\n  - identity:\n      secret_key: ${nsec[0]}\n    state_dir: /var/lib/other\n    http:\n      listen: 127.0.0.1:9000\n`,
  );
  assert.equal(problems.length, 2, problems.join("\n"));
  assert.match(
    problems[0]!,
    /:\d+:5: agents\[0\]\.state_dir: state_dir belongs to the daemon, which has one for all its agents: set it at the top level/,
  );
  assert.match(problems[1]!, /:\d+:5: agents\[0\]\.http: http belongs to the daemon/);
});

test("two agents with one key, or one agent.cwd, are refused naming both", () => {
  const problems = problemsOf(
    `${shared}agents:\n  - identity:\n      secret_key: ${nsec[0]}\n    agent:\n      cwd: /srv/work\n  - identity:\n      secret_key: ${nsec[0]}\n    agent:\n      cwd: /srv/work\n`,
  );
  assert.equal(problems.length, 2, problems.join("\n"));
  assert.ok(
    problems.some((p) => /agents\[1\]: agents\[0\] and agents\[1\] have the same key: each agent in a team needs its own identity/.test(p)),
  );
  assert.ok(problems.some((p) => /agents\[1\]: agents\[0\] and agents\[1\] have the same agent\.cwd \/srv\/work/.test(p)));
});

test("two agents that would both answer a message mentioning neither are refused; different respond_to in one channel is a team", () => {
  const both = problemsOf(
    `${shared}agents:\n  - identity:\n      secret_key: ${nsec[0]}\n    channels:\n      - id: "${CH[0]}"\n        require_mention: false\n  - identity:\n      secret_key: ${nsec[1]}\n    channels:\n      - id: "${CH[0]}"\n        participation: channel\n`,
  );
  assert.equal(both.length, 1, both.join("\n"));
  assert.match(
    both[0]!,
    new RegExp(`agents\\[1\\]: agents\\[0\\] and agents\\[1\\] would both answer every message in channel ${CH[0]} that mentions neither`),
  );
  const team = loadTeamText(
    `${shared}agents:\n  - identity:\n      secret_key: ${nsec[0]}\n    channels:\n      - id: "${CH[0]}"\n        respond_to: anyone\n  - identity:\n      secret_key: ${nsec[1]}\n    channels:\n      - id: "${CH[0]}"\n        respond_to: owner-only\n  - identity:\n      secret_key: ${nsec[2]}\n    channels:\n      - id: "${CH[0]}"\n        require_mention: false\n`,
    "/etc/bb/team.yaml",
    {},
  );
  assert.equal(team.members.length, 3);
});

test("agents: must be a list of mappings", () => {
  for (const bad of ["agents: []\n", "agents: reviewer\n", "agents:\n  - reviewer\n"]) {
    const problems = problemsOf(`${shared}${bad}`);
    assert.equal(problems.length, 1, problems.join("\n"));
    assert.match(problems[0]!, /agents: agents must be a list of mappings, one per agent/);
  }
});

test("team.max_concurrent belongs to a team: in a config of one agent it is an error saying to use agent.max_concurrent", () => {
  const problems = problemsOf(`${shared.replace("identity:\n", `identity:\n  secret_key: ${nsec[0]}\n`)}team:\n  max_concurrent: 2\n`);
  assert.equal(problems.length, 1, problems.join("\n"));
  assert.match(
    problems[0]!,
    /:\d+:19: team\.max_concurrent: team\.max_concurrent caps the agents of a team \(agents:\) together; this config runs one agent: set agent\.max_concurrent instead$/,
  );
  const team = loadTeamText(
    `${shared}team:\n  max_concurrent: 2\nagents:\n  - identity:\n      secret_key: ${nsec[0]}\n`,
    "/etc/bb/team.yaml",
    {},
  );
  assert.equal(team.members[0]!.config.team?.max_concurrent, 2);
});

test("a team problem points at the entry's own key: its identity, its agent.cwd, its channels", () => {
  const problems = problemsOf(
    `${shared}agents:\n  - identity:\n      secret_key: ${nsec[0]}\n    agent:\n      cwd: /srv/work\n  - identity:\n      secret_key: ${nsec[0]}\n    agent:\n      cwd: /srv/work\n`,
  );
  // Lines 16–19: the second entry's identity, its key, agent:, and its cwd.
  assert.deepEqual(
    problems.map((p) => p.split(": ")[0]),
    ["/etc/bb/team.yaml:17:7", "/etc/bb/team.yaml:19:12"],
    problems.join("\n"),
  );
  const both = problemsOf(
    `${shared}agents:\n  - identity:\n      secret_key: ${nsec[0]}\n    channels:\n      - id: "${CH[0]}"\n        require_mention: false\n  - identity:\n      secret_key: ${nsec[1]}\n    channels:\n      - id: "${CH[0]}"\n        participation: channel\n`,
  );
  assert.equal(both.length, 1, both.join("\n"));
  assert.match(both[0]!, /^\/etc\/bb\/team\.yaml:20:7: /, "at the second entry's channels");
});

test("every channel (*) answered unmentioned by two agents is refused; by one of them, or per channel, it is a team", () => {
  const star = (a: string, b: string) =>
    `${shared}agents:\n  - identity:\n      secret_key: ${nsec[0]}\n    channels:\n      - id: "*"\n${a}  - identity:\n      secret_key: ${nsec[1]}\n    channels:\n      - id: "*"\n${b}`;
  const unmentioned = "        require_mention: false\n";
  const both = problemsOf(star(unmentioned, unmentioned));
  assert.equal(both.length, 1, both.join("\n"));
  assert.match(
    both[0]!,
    /agents\[0\] and agents\[1\] would both answer every message in channel \(every channel both are in\) that mentions neither/,
  );
  assert.equal(loadTeamText(star(unmentioned, ""), "/etc/bb/team.yaml", {}).members.length, 2, "only one answers unmentioned");
  // Each channel by its own rule: agent 0 answers unmentioned in CH[0] only, agent 1 in CH[1] only.
  const perChannel = `${shared}agents:\n  - identity:\n      secret_key: ${nsec[0]}\n    channels:\n      - id: "${CH[0]}"\n        require_mention: false\n      - id: "${CH[1]}"\n  - identity:\n      secret_key: ${nsec[1]}\n    channels:\n      - id: "${CH[1]}"\n        require_mention: false\n`;
  assert.equal(loadTeamText(perChannel, "/etc/bb/team.yaml", {}).members.length, 2);
});

test("an entry's mapping is laid over the shared one key by key, the first shared key too; one of a pair replaces the other, keys of no pair stay", () => {
  const hb = join(mkdtempSync(join(tmpdir(), "bb-team-hb-")), "heartbeat.txt");
  writeFileSync(hb, "the entry's words\n");
  const team = loadTeamText(
    `${shared}heartbeat:\n  every: 1h\n  channel: "${CH[0]}"\n  prompt: shared words\nagents:\n  - identity:\n      secret_key: ${nsec[0]}\n    relay:\n      presence: false\n    heartbeat:\n      every: 2h\n  - identity:\n      secret_key: ${nsec[1]}\n    heartbeat:\n      prompt_file: ${hb}\n`,
    "/etc/bb/team.yaml",
    {},
  );
  const [a, b] = team.members.map((m) => m.config);
  assert.equal(a!.relay.url, "ws://127.0.0.1:7777", "the shared relay (the first key) keeps its url");
  assert.equal(a!.relay.presence, false);
  assert.deepEqual(
    [a!.heartbeat?.prompt, a!.heartbeat?.prompt_file],
    ["shared words", undefined],
    "no key of the pair in the entry: the shared one stays",
  );
  assert.deepEqual(
    [b!.heartbeat?.prompt, b!.heartbeat?.prompt_file],
    ["the entry's words", hb],
    "the entry's file replaces the shared text",
  );
  // identity: an entry's auth_tag_file replaces a shared auth_tag (else: "give at most one").
  const tagged = problemsOf(
    `${shared.replace("identity:\n", "identity:\n  auth_tag: not-a-tag\n")}agents:\n  - identity:\n      secret_key: ${nsec[0]}\n      auth_tag_file: /nonexistent/tag.json\n`,
  );
  assert.ok(!tagged.some((p) => p.includes("give at most one")), tagged.join("\n"));
});
