// The runner with a real ACP agent: @zed-industries/claude-code-acp (devDependency)
// driven by a small fake Anthropic Messages API on 127.0.0.1 (streaming SSE). The model
// calls the proxy's send_message when it sees it and no tool result yet, else writes text.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { existsSync, readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { AgentPool } from "../src/agent/index.js";
import { REPO, demoPool, tempDir } from "./fixtures/agent-helpers.js";
import { needs } from "./fixtures/ci.js";

const CLAUDE = join(REPO, "node_modules/.bin/claude-code-acp");

function fakeAnthropic(): Server {
  return createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c));
    req.on("end", () => {
      const j = JSON.parse(body || "{}") as { tools?: Array<{ name: string }>; messages?: unknown; model?: string };
      const target = (j.tools ?? []).map((t) => t.name).find((n) => n.endsWith("send_message"));
      const answered = JSON.stringify(j.messages ?? []).includes("tool_result");
      res.writeHead(200, { "content-type": "text/event-stream" });
      const ev = (type: string, data: object) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      ev("message_start", {
        message: {
          id: "msg_1",
          type: "message",
          role: "assistant",
          model: j.model ?? "claude",
          content: [],
          stop_reason: null,
          usage: { input_tokens: 1, output_tokens: 1 },
        },
      });
      if (target && !answered) {
        ev("content_block_start", { index: 0, content_block: { type: "tool_use", id: "toolu_1", name: target, input: {} } });
        ev("content_block_delta", {
          index: 0,
          delta: { type: "input_json_delta", partial_json: JSON.stringify({ content: "hello from claude" }) },
        });
        ev("content_block_stop", { index: 0 });
        ev("message_delta", { delta: { stop_reason: "tool_use" }, usage: { output_tokens: 5 } });
      } else {
        ev("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
        ev("content_block_delta", { index: 0, delta: { type: "text_delta", text: "All done." } });
        ev("content_block_stop", { index: 0 });
        ev("message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: 5 } });
      }
      ev("message_stop", {});
      res.end();
    });
  });
}

const claude = needs(existsSync(CLAUDE), "claude-code-acp (the devDependency @zed-industries/claude-code-acp; npm ci installs it)");

describe("claude-code-acp through the agent runner", { skip: claude.skip }, () => {
  const tmp = tempDir("agent-claude-");
  const server = fakeAnthropic();
  let pool: AgentPool;
  const sendLog = join(tmp.dir, "send.jsonl");

  before(async () => {
    claude.assertPresent();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    pool = demoPool(tmp.dir, {
      command: CLAUDE,
      args: [],
      env: {
        HOME: join(tmp.dir, "home"),
        ANTHROPIC_API_KEY: "test-key",
        ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`,
        IS_SANDBOX: "1",
        ENABLE_TOOL_SEARCH: "false",
        DISABLE_TELEMETRY: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_AUTOUPDATER: "1",
      },
      mode: "default",
      initTimeoutMs: 30_000,
      idleTimeoutMs: 30_000,
    });
  });
  after(async () => {
    await pool?.close();
    server.close();
    tmp.cleanup();
  });

  it("a turn ends with the agent calling the proxy's send_message; a text-only turn leaves final text", async () => {
    const s = await pool.acquire("claude", { channel: { id: "general", name: "general" }, mcpEnv: { ECHO_SEND_LOG: sendLog } });
    assert.equal(s.proc.agentInfo?.name, "@zed-industries/claude-code-acp");
    const first = await s.prompt([{ type: "text", text: "Please reply in the thread." }]);
    assert.equal(first.stopReason, "end_turn");
    assert.equal(first.toolCalls, 1);
    assert.deepEqual(JSON.parse(readFileSync(sendLog, "utf8").trim()), { content: "hello from claude" });
    // Second turn: the history holds the tool result, so the fake model only writes text.
    const second = await s.prompt([{ type: "text", text: "Anything else?" }]);
    assert.equal(second.stopReason, "end_turn");
    assert.equal(second.toolCalls, 0);
    assert.equal(second.finalText, "All done.");
    assert.equal(readFileSync(sendLog, "utf8").trim().split("\n").length, 1);
  });
});
