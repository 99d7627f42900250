// The runner with a real ACP agent: @agentclientprotocol/claude-agent-acp (devDependency)
// driven by the scripted model (test/fixtures/fake-llm.ts, Anthropic Messages, streamed). The
// model calls the proxy's send_message when it sees it and no tool result yet, else writes text.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentPool } from "../src/agent/index.js";
import { demoPool, tempDir } from "./fixtures/agent-helpers.js";
import { claudeAgentAcpBin, offlineClaudeEnv } from "./fixtures/claude-code.js";
import { startFakeLlm, type FakeLlm } from "./fixtures/fake-llm.js";

describe("claude-agent-acp through the agent runner", () => {
  const tmp = tempDir("agent-claude-");
  let api: FakeLlm;
  let pool: AgentPool;
  const sendLog = join(tmp.dir, "send.jsonl");

  before(async () => {
    api = await startFakeLlm({ replyText: "hello from claude", afterToolText: "All done." });
    pool = demoPool(tmp.dir, {
      command: claudeAgentAcpBin(),
      args: [],
      env: { ...offlineClaudeEnv(api.url), HOME: join(tmp.dir, "home") },
      mode: "default",
      initTimeoutMs: 30_000,
      idleTimeoutMs: 30_000,
    });
  });
  after(async () => {
    await pool?.close();
    await api?.close();
    tmp.cleanup();
  });

  it("a turn ends with the agent calling the proxy's send_message; a text-only turn leaves final text", async () => {
    const s = await pool.acquire("claude", { channel: { id: "general", name: "general" }, mcpEnv: { ECHO_SEND_LOG: sendLog } });
    assert.equal(s.proc.agentInfo?.name, "@agentclientprotocol/claude-agent-acp");
    const first = await s.prompt([{ type: "text", text: "Please reply in the thread." }]);
    assert.equal(first.stopReason, "end_turn");
    assert.equal(first.toolCalls, 1);
    assert.deepEqual(JSON.parse(readFileSync(sendLog, "utf8").trim()), { content: "hello from claude" });
    api.setMode("text");
    api.script({ finalText: "All done." });
    const second = await s.prompt([{ type: "text", text: "Anything else?" }]);
    assert.equal(second.stopReason, "end_turn");
    assert.equal(second.toolCalls, 0);
    assert.equal(second.finalText, "All done.");
    assert.equal(readFileSync(sendLog, "utf8").trim().split("\n").length, 1);
  });
});
