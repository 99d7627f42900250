/**
 * opencode through `agent.preset: opencode` (opencode-ai, a devDependency), offline against
 * the scripted OpenAI Chat Completions API: only a base URL, a model and a fake key are
 * configured (test/fixtures/preset-suite.ts).
 */
import { presetSuite } from "./fixtures/preset-suite.js";

presetSuite({
  preset: "opencode",
  baseUrl: (origin) => `${origin}/v1`,
  model: "gateway-coder",
  key: { OPENAI_API_KEY: "fake-key" },
  toolName: "buzz_send_message",
  steer: "cancel-merge",
});
