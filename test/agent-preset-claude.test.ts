/**
 * Claude Code through `agent.preset: claude` (@agentclientprotocol/claude-agent-acp, a
 * devDependency), offline against the scripted Anthropic Messages API: only a base URL, a
 * model and a fake key are configured (test/fixtures/preset-suite.ts).
 */
import { presetSuite } from "./fixtures/preset-suite.js";

presetSuite({
  preset: "claude",
  baseUrl: (origin) => origin,
  model: "claude-gateway-model",
  key: { ANTHROPIC_API_KEY: "fake-key" },
  toolName: "mcp__buzz__send_message",
  steer: "native",
});
