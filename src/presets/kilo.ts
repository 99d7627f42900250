/** Kilo Code CLI in ACP mode (`kilo acp`). From its documentation; not run in CI. */
import type { Preset } from "./types.js";

export const kilo: Preset = {
  name: "kilo",
  title: "Kilo Code CLI",
  command: "kilo",
  args: ["acp"],
  install: "npm install -g @kilocode/cli",
  versionArgs: ["--version"],
  keys: ["KILO_API_KEY", "KILOCODE_TOKEN", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY"],
  needs: "a Kilo Code login (`kilo auth`) or the key of the model's provider",
  verified: "docs",
  caveats: "Provider endpoints are set in Kilo's own configuration; agent.provider does not apply.",
  advice: { dropped: "Kilo started without the bridge's MCP server; check agent.stderr lines in the log" },
  launch(i) {
    // agent.model (`provider/model`): a session config option, as in opencode, which Kilo derives from.
    return { args: [], env: {}, files: [], sessionModel: i.model, sessionEffort: i.effort };
  },
};
