/**
 * Gemini CLI through `agent.preset: gemini` (@google/gemini-cli, a devDependency), offline
 * against the scripted Gemini generateContent API: only a base URL, a model and a fake key
 * are configured (test/fixtures/preset-suite.ts).
 */
import { presetSuite } from "./fixtures/preset-suite.js";

presetSuite({
  preset: "gemini",
  baseUrl: (origin) => origin,
  model: "gemini-2.5-flash",
  key: { GEMINI_API_KEY: "fake-key" },
  toolName: "mcp_buzz_send_message",
  steer: "cancel-merge",
  mayNotResume: "Gemini CLI 0.61 sometimes answers session/load of the thread's session with an internal error",
});
