/**
 * `buzz-bridge tail` and `demo --keep` as a person uses them: a channel read live, with
 * messages, the bridge's reactions (👀 → ✅) and owner-command outcomes (kind 40099) by
 * name; `demo --keep` prints post commands that work as printed from a fresh checkout
 * (after `npm start`, without `npm link`), and its feed shows what they cause.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { nip19 } from "nostr-tools";
import { stringify } from "yaml";
import { KIND } from "../src/nostr/kinds.js";
import { message, reaction, replyRefFor } from "../src/nostr/events.js";
import { CLI, REPO, World } from "../kit/world.js";
import { waitFor } from "../kit/wait.js";
import { runCli } from "./fixtures/cli.js";
import { entries, teamAgents, teamShared } from "./fixtures/team.js";

let w: World;
const children: ChildProcess[] = [];
before(async () => {
  w = await World.create({ channelName: "build-room" });
});
after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await w.close();
});

/** A child whose stdout is collected; `until` waits for a pattern in it. */
function run(args: string[], cwd = REPO) {
  const proc = spawn(process.execPath, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
  children.push(proc);
  let out = "";
  let err = "";
  proc.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const shown = () => `${out}\n--- stderr ---\n${err.slice(-2000)}`;
  const until = (re: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> =>
    waitFor(
      () => {
        assert.equal(proc.exitCode, null, `exited before printing ${re}:\n${shown()}`);
        return re.exec(out);
      },
      { timeoutMs, intervalMs: 100, what: () => `${re} in:\n${shown()}` },
    );
  const exited = new Promise<number | null>((r) => proc.on("exit", (code) => r(code)));
  return { proc, out: () => out, err: () => err, until, exited };
}

test("tail prints messages, the bridge's reactions and !status's outcome live, by name", async () => {
  const owner = await w.owner.relay();
  await owner.send({
    kind: KIND.profile,
    created_at: Math.floor(Date.now() / 1000),
    tags: [],
    content: JSON.stringify({ name: "olivia" }),
  });
  const daemon = await w.startDaemon({ relay: { presence: false } });
  const tail = run([CLI, "tail", "-c", daemon.configFile, "--channel", w.channel]);
  const following = () => {
    assert.equal(tail.proc.exitCode, null, tail.err());
    return tail.err().includes("following #build-room");
  };
  await waitFor(following, { timeoutMs: 60_000, intervalMs: 100, what: () => `"following #build-room" on stderr: ${tail.err()}` });
  await w.owner.post("@agent draft the release notes");
  await tail.until(/#build-room {2}olivia: @agent draft the release notes {2}→ @\S+$/m);
  await tail.until(/reacted 👀 to olivia: "@agent draft the release notes"/);
  await tail.until(/#build-room ↳ olivia's thread {2}\S+: /);
  await tail.until(/reacted ✅ to olivia: "@agent draft the release notes"/);
  // A client that writes "@agent" without the p tag: shown without an arrow (the bridge never sees it).
  await w.owner.post("@agent are you listening?", { mention: false });
  await tail.until(/#build-room {2}olivia: @agent are you listening\?$/m);
  await w.owner.post("!status");
  // Said once, in words: not the figures and then the same figures again as a sentence.
  const status = await tail.until(/#build-room {2}· control\.status \(ok\) by olivia — (.*)$/m);
  assert.match(status[1]!, /^\d+ turns? in flight, \d+ events? queued; no usage reported today$/);
  tail.proc.kill("SIGINT");
  assert.equal(await tail.exited, 0);
  await daemon.stop();
});

test("tail follows the channels the agent is added to and removed from while it runs, and shows people without a profile by short npub", async (t) => {
  // A world of its own: the channels it adds and removes are no other test's.
  const w = await World.create({ channelName: "build-room" });
  t.after(() => w.close());
  const file = w.writeConfig({}, "tail-follow.yaml");
  const tail = run([CLI, "tail", "-c", file]);
  const started = () => {
    assert.equal(tail.proc.exitCode, null, tail.err());
    return tail.err().includes("following #build-room");
  };
  await waitFor(started, { timeoutMs: 60_000, intervalMs: 100, what: () => `tail started: ${tail.err()}` });
  const later = await w.relay.createChannel({ name: "late-room", members: [w.owner.pk, w.teammate.pk] });
  await w.relay.addMember(later, w.agent.pk);
  await tail.until(/#late-room {2}· added to #late-room \([0-9a-f-]{36}\); following it$/m);
  // The teammate has no kind 0 profile: a short npub, not hex.
  await w.teammate.post("a message in the new room", { channel: later, mention: false });
  const short = `${w.teammate.npub.slice(0, 10)}…${w.teammate.npub.slice(-4)}`;
  await tail.until(new RegExp(`#late-room {2}${short}: a message in the new room$`, "m"));
  await w.relay.removeMember(later, w.agent.pk);
  await tail.until(/#late-room {2}· removed from #late-room \([0-9a-f-]{36}\); no longer following it$/m);
  tail.proc.kill("SIGINT");
  assert.equal(await tail.exited, 0);
});

test("tail --channel takes a channel's name, with or without #, as well as its UUID", async () => {
  const file = w.writeConfig({}, "tail-names.yaml");
  for (const arg of ["build-room", "#build-room", w.channel]) {
    const tail = run([CLI, "tail", "-c", file, "--channel", arg]);
    const following = () => {
      assert.equal(tail.proc.exitCode, null, tail.err());
      return tail.err().includes(`following #build-room (${w.channel})`);
    };
    await waitFor(following, { timeoutMs: 60_000, intervalMs: 100, what: () => `${arg}: ${tail.err()}` });
    tail.proc.kill("SIGINT");
    assert.equal(await tail.exited, 0);
  }
  const none = run([CLI, "tail", "-c", file, "--channel", "no-such-room"]);
  assert.equal(await none.exited, 1);
  assert.match(none.err(), /not a member of a channel named or with UUID 'no-such-room' \(its channels: #build-room \(/);
});

test("tail by an identity the relay does not admit says so and names the npub to add", async () => {
  const { generateSecretKey, getPublicKey, nip19 } = await import("nostr-tools");
  const sk = generateSecretKey();
  const file = w.writeConfig({ identity: { secret_key: nip19.nsecEncode(sk) } }, "outsider-tail.yaml");
  const tail = run([CLI, "tail", "-c", file]);
  assert.equal(await tail.exited, 2);
  assert.match(
    tail.err(),
    new RegExp(`tail: restricted: not a relay member: ask the relay admin to add ${nip19.npubEncode(getPublicKey(sk))} as a relay member`),
  );
});

test("tail on a team's config reads as the agent --agent names, and without it lists the agents to choose from", async (t) => {
  // A world of its own: its second agent and the channel only that agent is in are no other test's.
  const w = await World.create({ channelName: "build-room" });
  t.after(() => w.close());
  const agents = await teamAgents(w, 1);
  const second = agents[1]!;
  await w.relay.addMember(await w.addChannel({ name: "second-only", members: [w.owner] }), second.pk);
  const file = join(w.dir, "tail-team.yaml");
  writeFileSync(file, stringify({ ...teamShared(w), agents: entries(agents) }));
  const id = second.pk.slice(0, 16);

  const unnamed = await runCli(["tail", "-c", file]);
  assert.equal(unnamed.status, 1);
  assert.match(
    unnamed.stderr,
    new RegExp(
      `this config runs 2 agents; name one with --agent ID: [0-9a-f]{16} \\(agents\\[0\\], npub1\\w+\\), ${id} \\(agents\\[1\\], ${nip19.npubEncode(second.pk)}\\)`,
    ),
  );
  const unknown = await runCli(["tail", "-c", file, "--agent", "0123456789abcdef"]);
  assert.equal(unknown.status, 1);
  assert.match(unknown.stderr, /no agent of this config is 0123456789abcdef; its agents: /);

  // Only the second agent is in #second-only: tail lists it when it reads as that agent.
  for (const arg of [id, nip19.npubEncode(second.pk)]) {
    const tail = run([CLI, "tail", "-c", file, "--agent", arg]);
    await waitFor(
      () => {
        assert.equal(tail.proc.exitCode, null, tail.err());
        return /^following .*#second-only/m.test(tail.err());
      },
      { timeoutMs: 60_000, intervalMs: 100, what: () => `--agent ${arg}: "following … #second-only" on stderr: ${tail.err()}` },
    );
    tail.proc.kill("SIGINT");
    assert.equal(await tail.exited, 0);
  }
});

test("demo --keep prints post commands that work as printed, and its feed shows replies, reactions and !status", async () => {
  const demo = run([CLI, "demo", "--keep"]);
  await demo.until(/Live from #release-room/, 120_000);
  const commands = [...demo.out().matchAll(/^ {2}(node \S+ post .*)$/gm)].map((m) => m[1]!);
  assert.equal(commands.length, 2, demo.out());
  for (const c of commands) assert.match(c, /^node dist\/cli\.js post /, "runnable from the checkout without npm link");
  const sh = (cmd: string) =>
    new Promise<number | null>((resolve) => spawn("sh", ["-c", cmd], { cwd: REPO, stdio: "ignore" }).on("exit", resolve));
  assert.equal(await sh(commands[0]!), 0, commands[0]);
  await demo.until(/#release-room {2}bob \(teammate\): hello agent {2}→ @\S+$/m);
  await demo.until(/reacted ✅ to bob \(teammate\): "hello agent"/);
  assert.equal(await sh(commands[1]!), 0, commands[1]);
  await demo.until(/· control\.status \(\w[\w-]*\) by alice \(owner\)/);
  assert.doesNotMatch(demo.out().split("Live from")[1]!, /What is this room for/, "the scripted part is not replayed into the feed");
  demo.proc.kill("SIGINT");
  assert.equal(await demo.exited, 0, demo.err().slice(-2000));
});

test("a mention, its reply and their reactions from one second, posted before tail starts, print in the order they happened, the reply in the asker's thread", async () => {
  // created_at counts seconds, and a relay orders one second's events by id: a turn that ended
  // within the second it began in could print its reply before the mention, as "↳ thread 1a2b3c4d".
  // One second just past: tail replays from 5 s before the newest event it has seen or its
  // start (the client's skew), whole seconds, and a second boundary crossed before it starts
  // must not put these events outside that window.
  const at = Math.floor(Date.now() / 1000) - 1;
  const room = await w.addChannel({ name: "one-second", members: [w.owner, w.agent] });
  const owner = await w.owner.relay();
  const agent = await w.agent.relay();
  const sent = async (c: typeof owner, t: { kind: number; content: string; tags: string[][] }) => {
    const { event, outcome } = await c.send({ ...t, created_at: at });
    assert.equal(outcome.status, "accepted", outcome.reason);
    return event;
  };
  const mention = await sent(owner, message(room, "@agent what changed in one second?", { mentions: [w.agent.pk] }));
  await sent(agent, reaction(mention, "👀", room));
  await sent(agent, message(room, "Everything, quickly.", { mentions: [w.owner.pk], thread: replyRefFor(mention) }));
  await sent(agent, reaction(mention, "✅", room));
  const tail = run([CLI, "tail", "-c", w.writeConfig({}, "one-second.yaml"), "--channel", "one-second"]);
  await tail.until(/reacted ✅ to .*$/m);
  const lines = tail.out().trim().split("\n");
  const agent_ = /^\S+ #one-second {2}(\S+) reacted 👀/m.exec(tail.out())?.[1] ?? "(no 👀 line)";
  const shown = lines.map((l) => l.replace(/^\d\d:\d\d:\d\d #one-second/, "").replace(/ {2}→ .*$/, ""));
  // The mention comes first; what follows it in the same second has no order but its references.
  assert.equal(shown[0], "  olivia: @agent what changed in one second?", tail.out());
  assert.deepEqual(
    shown.slice(1).sort(),
    [
      ` ↳ olivia's thread  ${agent_}: Everything, quickly.`,
      `  ${agent_} reacted 👀 to olivia: "@agent what changed in one second?"`,
      `  ${agent_} reacted ✅ to olivia: "@agent what changed in one second?"`,
    ].sort(),
    tail.out(),
  );
  tail.proc.kill("SIGINT");
  assert.equal(await tail.exited, 0);
});

test("dev-relay --help points at docs/dev-relay.md for the seed format and the admin API", async () => {
  const r = run([CLI, "dev-relay", "--help"]);
  assert.equal(await r.exited, 0);
  assert.match(r.out(), /--seed FILE .*\(docs\/dev-relay\.md\)/);
  assert.match(r.out(), /admin API is\s+in docs\/dev-relay\.md/);
  assert.doesNotMatch(r.out(), /design §/);
});
