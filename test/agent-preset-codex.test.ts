/**
 * Codex through `agent.preset: codex` (@zed-industries/codex-acp, a devDependency: its npm
 * launcher runs the platform binary), offline against the scripted OpenAI Responses API:
 * only a base URL, a model and a fake key are configured (test/fixtures/preset-suite.ts).
 */
import { presetSuite } from "./fixtures/preset-suite.js";

presetSuite({
  preset: "codex",
  baseUrl: (origin) => `${origin}/v1`,
  model: "gateway-coder",
  key: { OPENAI_API_KEY: "fake-key" },
  toolName: "mcp__buzz__send_message",
  steer: "cancel-merge",
});
