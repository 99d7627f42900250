/**
 * Compatibility with a real ACP agent: the daemon drives `@zed-industries/claude-code-acp`
 * (the real Claude Code agent, a devDependency) against a scripted fake Anthropic
 * Messages API on 127.0.0.1 (test/fixtures/fake-anthropic.mjs). No network, no API key.
 *
 * What a person sees: a mention is answered in its thread by the agent calling the
 * proxy's `send_message` (Claude sees it as `mcp__buzz__send_message`); when the model
 * only writes text, the bridge publishes that text as the fallback reply; `!cancel`
 * stops a stalled turn and the thread goes on; shutdown leaves no Claude process behind.
 * The agent is configured the way docs/agents.md tells users to.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { World, type DaemonProc } from "./fixtures/world.js";
import { claudeCodeAcpBin, offlineClaudeEnv } from "./fixtures/claude-code.js";
import { KIND } from "../src/nostr/kinds.js";
import { threadRootOf } from "../src/nostr/events.js";
// @ts-expect-error — plain ESM fixture without type declarations
import { startFakeAnthropic } from "./fixtures/fake-anthropic.mjs";
import { sleep, waitFor } from "./fixtures/wait.js";

interface FakeApi {
  url: string;
  requests: { body: { system?: unknown; messages?: unknown[]; tools?: { name: string }[] } }[];
  setMode(mode: "tool" | "text" | "hang"): void;
  readonly hangingCount: number;
  turnRequests(): FakeApi["requests"];
  close(): Promise<void>;
}

const REPLY = "Hi owner, the build room ships releases (sent with send_message).";
const FINAL = "Plain final text from the model, no tool used.";

let w: World;
let d: DaemonProc;
let api: FakeApi;
let home: string;
/** The first test's mention: later tests continue its thread (and so its agent session). */
let firstMention: Event;

/**
 * Live processes whose environment carries our scratch HOME: the agent and the Claude CLI
 * it spawned. In the agent sandbox (agent.sandbox: auto, where bubblewrap works) HOME is the
 * channel's own under the state directory instead of the configured one.
 */
function processesWithHome(dir: string): number[] {
  const homes = [`HOME=${dir}`, `HOME=${join(w.dir, "state", "homes", "build-room")}`];
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (
        readFileSync(`/proc/${name}/environ`, "utf8")
          .split("\0")
          .some((v) => homes.includes(v))
      )
        pids.push(Number(name));
    } catch {
      /* gone, or not ours to read */
    }
  }
  return pids;
}

before(async () => {
  api = (await startFakeAnthropic({ replyText: REPLY, finalText: FINAL })) as FakeApi;
  w = await World.create({ channelName: "build-room", about: "Where the build team coordinates releases" });
  home = join(w.dir, "claude-home");
  mkdirSync(home, { recursive: true });
  d = await w.startDaemon({
    agent: {
      command: claudeCodeAcpBin(),
      args: [],
      env: { ...offlineClaudeEnv(api.url), HOME: home },
      mode: "default",
      model: "haiku", // claude-code-acp offers default, opus, opus[1m], haiku through its model selector
      permissions: "allow",
      idle_timeout: "40s",
    },
    defaults: { team_instructions: "Always run the tests first.", reply_fallback: "final_text" },
  });
});
after(async () => {
  await w?.close();
  await api?.close();
});

test("claude-code-acp answers a mention by calling the proxy's send_message; the reply is in the thread", async () => {
  api.setMode("tool");
  const ev = await w.owner.post("@agent what is this room for?");
  firstMention = ev;
  const [reply] = await w.waitReplies(ev, 1, 75_000);
  assert.equal(reply!.content, REPLY);
  assert.equal(threadRootOf(reply!), ev.id, "the reply is in the mention's thread");
  await w.waitReaction(ev, "✅", 30_000);
  await d.waitLog((l) => l.evt === "turn.end" && l.status === "answered" && l.via === "tool", 30_000);

  const turns = api.turnRequests();
  assert.ok(turns.length >= 2, "the model was asked, then shown the tool result");
  assert.ok(
    turns[0]!.body.tools!.some((t) => t.name === "mcp__buzz__send_message"),
    "Claude sees the proxy's tool as mcp__buzz__send_message",
  );
  const seen = JSON.stringify([turns[0]!.body.system, turns[0]!.body.messages]);
  assert.match(seen, /Where the build team coordinates releases/, "the model saw the channel description");
  assert.match(seen, /Always run the tests first/, "the model saw the team instructions");
  assert.match(seen, /what is this room for\?/, "the model saw the question");
  const all = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] });
  assert.equal(all.length, 1, "one reply: no fallback on top of the tool reply");
});

test("agent.model is applied through claude-code-acp's model selector: the model API is asked for that model", async () => {
  const turns = api.turnRequests();
  assert.ok(turns.length > 0, "the first test ran a turn");
  const models = [...new Set(turns.map((r) => String((r.body as { model?: unknown }).model)))];
  assert.equal(models.length, 1, `one model for every turn request: ${models.join(", ")}`);
  assert.match(models[0]!, /haiku/, "the configured model, not Claude Code's default");
  const opened = await d.waitLog((l) => l.evt === "agent.session_open", 5_000);
  assert.equal(opened.model, "haiku", "the session log line names the model");
});

test("when the model only writes text, the bridge publishes it as the fallback reply", async () => {
  api.setMode("text");
  const ev = await w.owner.post("@agent give me a one-liner");
  const [reply] = await w.waitReplies(ev, 1, 75_000);
  assert.equal(reply!.content.trim(), FINAL);
  assert.equal(threadRootOf(reply!), ev.id);
  await w.waitReaction(ev, "✅", 30_000);
  await d.waitLog((l) => l.evt === "turn.end" && l.via === "fallback", 30_000);
  const all = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] });
  assert.equal(all.length, 1, "exactly one reply");
});

test("!cancel stops a real agent's stalled turn, and the thread's session answers the next mention", async () => {
  api.setMode("hang");
  const stalled = await w.owner.post("@agent take your time", { replyTo: firstMention });
  await w.waitReaction(stalled, "👀", 30_000);
  await waitFor(() => api.hangingCount !== 0, {
    timeoutMs: 30_000,
    intervalMs: 100,
    what: "the agent to ask the model for the stalled turn",
  });
  await w.owner.post("!cancel", { replyTo: firstMention });
  const [outcome] = await w.waitEvents(
    { kinds: [KIND.system], authors: [w.agent.pk], "#e": [firstMention.id] },
    (e) => e.length > 0,
    30_000,
  );
  assert.match(outcome!.content, /cancel/, "the command's outcome is shown in the thread");
  const ended = await d.waitLog((l) => l.evt === "agent.turn_end" && l.stop === "cancelled", 30_000);
  assert.equal(ended.killed, false, "claude-code-acp honoured session/cancel (no kill needed)");
  await d.waitLog((l) => l.evt === "turn.end" && l.status === "cancelled", 30_000);
  const replies = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [stalled.id] });
  assert.deepEqual(
    replies.map((r) => r.content),
    [],
    "a cancelled turn publishes nothing: no notice, no fallback",
  );

  api.setMode("tool");
  const next = await w.owner.post("@agent are you still there?", { replyTo: firstMention });
  const [reply] = await w.waitReplies(next, 1, 60_000);
  assert.equal(reply!.content, REPLY);
  assert.equal(threadRootOf(reply!), firstMention.id);
});

test("mid_turn steer with claude-code-acp (no native steering): a message in the thread while the model stalls cancels and re-prompts the same session; the model sees it framed as arriving mid-work; one reply", async () => {
  api.setMode("hang");
  const stalled = await w.owner.post("@agent refactor the release script");
  await waitFor(() => api.hangingCount !== 0, {
    timeoutMs: 30_000,
    intervalMs: 100,
    what: "the agent to ask the model for the stalled turn",
  });
  const before = api.turnRequests().length;
  api.setMode("tool");
  const steer = await w.owner.post("@agent also keep the old flags working", { replyTo: stalled });
  const line = await d.waitLog((l) => l.evt === "turn.steered" && (l.events as string[]).includes(steer.id), 30_000);
  assert.equal(line.method, "cancel-merge", "claude-code-acp 0.16 does not advertise _session/steering");
  const [reply] = await w.waitReplies(stalled, 1, 75_000);
  assert.equal(reply!.content, REPLY);
  await w.waitReaction(stalled, "✅", 30_000);
  await sleep(1500); // a second reply would be stored by now
  assert.equal(
    (await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [stalled.id] })).length,
    1,
    "one reply for both messages",
  );
  const later = JSON.stringify(
    api
      .turnRequests()
      .slice(before)
      .map((r) => r.body.messages),
  );
  assert.match(later, /arrived while you were working/, "the model was told the message came mid-work");
  assert.match(later, /also keep the old flags working/);
});

test("on SIGTERM the daemon exits 0 and leaves no Claude process behind", async () => {
  assert.ok(processesWithHome(home).length > 0, "the agent processes were found while running");
  assert.equal(await d.stop("SIGTERM"), 0);
  await waitFor(() => processesWithHome(home).length === 0, {
    timeoutMs: 10_000,
    intervalMs: 200,
    what: () => `no agent or Claude CLI process left: ${JSON.stringify(processesWithHome(home))}`,
  });
  assert.deepEqual(processesWithHome(home), [], "no orphaned agent or Claude CLI process");
});

test("after a restart, a thread's next mention resumes its Claude session (session/resume)", async () => {
  const again = await w.startDaemon({}, { configFile: d.configFile });
  api.setMode("tool");
  const next = await w.owner.post("@agent picking up where we left off", { replyTo: firstMention });
  const [reply] = await w.waitReplies(next, 1, 75_000);
  assert.equal(reply!.content, REPLY);
  const opened = await again.waitLog((l) => l.evt === "turn.session", 10_000);
  assert.equal(opened.resumed, true, "the thread's session was reopened, not started over");
  assert.equal(await again.stop("SIGTERM"), 0);
});
