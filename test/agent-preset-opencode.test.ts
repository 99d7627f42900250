/**
 * opencode through `agent.preset: opencode` (opencode-ai, installed on first use by ./fixtures/opencode-install.ts), offline against
 * the scripted OpenAI Chat Completions API: only a base URL, a model and a fake key are
 * configured (test/fixtures/preset-suite.ts).
 */
import { opencodeBinDir } from "./fixtures/opencode-install.js";
import { presetSuite } from "./fixtures/preset-suite.js";

presetSuite({
  preset: "opencode",
  baseUrl: (origin) => `${origin}/v1`,
  model: "gateway-coder",
  key: { OPENAI_API_KEY: "fake-key" },
  toolName: "buzz_send_message",
  steer: "cancel-merge",
  binDir: opencodeBinDir,
});
