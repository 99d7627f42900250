/**
 * `_PreToolUse` on a real agent's own tool: Claude Code through `agent.preset: claude`
 * (@agentclientprotocol/claude-agent-acp, a devDependency), offline against the scripted
 * Anthropic API (test/fixtures/fake-llm.ts). The model calls Claude's Bash tool with a
 * command that creates a file; the preset's session mode `default` makes Claude ask the
 * bridge's permission first (docs/agents.md, "Gates on the agent's own tools"), and a
 * `pre_tool: block` gate server objects although `agent.permissions` is `allow`. Judged by
 * the file (never created) and by what the model was told next (the rejection as the
 * tool's result), and the reply that reaches the channel.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { REPO, World, type DaemonProc } from "../kit/world.js";
import { startFakeLlm, type FakeLlm } from "./fixtures/fake-llm.js";
import { gateServer } from "./fixtures/gates-helpers.js";

const REPLY = "Tried the shell:";

let w: World;
let d: DaemonProc;
let api: FakeLlm;
let target: string;

before(async () => {
  w = await World.create({ channelName: "pre-tool-claude" });
  target = join(w.dir, "made-by-bash.txt");
  api = await startFakeLlm({
    replyText: REPLY,
    // Claude's own shell tool, called before the bridge's send_message, whose text carries the tool's result.
    readFirst: { tool: "Bash", input: { command: `touch ${target}`, description: "Create a marker file" } },
  });
  d = await w.startDaemon(
    {
      agent: {
        // The base config's demo agent out of the way: the preset names the command.
        command: undefined,
        args: undefined,
        preset: "claude",
        provider: { base_url: api.url, model: "claude-gateway-model" },
        env: { ANTHROPIC_API_KEY: "fake-key" },
        permissions: "allow",
        idle_timeout: "90s",
      },
      mcp: {
        servers: {
          policy: {
            ...gateServer({
              GATE_NO_STOP: "1",
              GATE_PRE_TOOL: "1",
              GATE_PRE_TOOL_OBJECT: "made-by-bash",
              GATE_PRE_TOOL_TEXT: "no shell writes here",
            }),
            pre_tool: "block",
          },
        },
      },
    },
    { env: { PATH: `${join(REPO, "node_modules", ".bin")}:${process.env.PATH ?? ""}` } },
  );
});
after(async () => {
  await w?.close();
  await api?.close();
});

test("claude: the gate blocks Claude's own Bash call (no file); the model gets the rejection as the tool's result", async () => {
  const ev = await w.owner.post("@agent please create the marker file");
  const [reply] = await w.waitReplies(ev, 1, 120_000);
  assert.equal(existsSync(target), false, "the blocked command never ran");

  const denied = d.logs.filter((l) => l.evt === "agent.permission" && l.by === "pre_tool");
  assert.equal(denied.length, 1, "exactly one permission request, answered by the gate");
  assert.equal(denied[0]!.verdict, "denied");

  // Each request to the model carries the whole conversation so far, so the Bash call's result
  // comes again in every later request: counted by call, there must be exactly one.
  const results = api.requests.flatMap((r) => r.toolResults).filter((x) => x.callId.startsWith("call_read_"));
  const bash = [...new Map(results.map((x) => [x.callId, x])).values()];
  assert.equal(bash.length, 1, "the model's next request carries the Bash call's result: one call, one result");
  assert.ok(
    results.every((x) => x.text === bash[0]!.text),
    "every later request repeats the same result",
  );
  assert.match(bash[0]!.text, /refused|rejected|denied/i, "Claude told the model the call was refused");
  assert.ok(reply!.content.startsWith(REPLY), `the reply came through send_message: ${reply!.content}`);
  assert.ok(reply!.content.includes(bash[0]!.text.trim().slice(0, 40)), "the reply quotes what Claude was told");
  // The preset reaches the proxy over the daemon's HTTP slot (its own line) or stdio (wrapped in `proxy`).
  const asked = (l: Record<string, unknown>) => (l.proxy as Record<string, unknown> | undefined) ?? l;
  await d.waitLog((l) => asked(l).evt === "hook.pre_tool" && asked(l).verdict === "block" && asked(l).server === "agent");
});
