/** GitHub Copilot CLI in ACP mode (`copilot --acp --stdio`). From its documentation; not run in CI. */
import type { Preset } from "./types.js";

export const copilot: Preset = {
  name: "copilot",
  title: "GitHub Copilot CLI",
  command: "copilot",
  args: ["--acp", "--stdio"],
  install: "npm install -g @github/copilot",
  versionArgs: ["--version"],
  keys: ["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"],
  needs: "GH_TOKEN: a fine-grained personal access token with the Copilot Requests permission",
  verified: "docs",
  caveats: "Talks only to GitHub's Copilot service: agent.provider does not apply, and doctor cannot show its tools offline.",
  advice: { dropped: "Copilot started without the bridge's MCP server; check agent.stderr lines in the log" },
  launch(i) {
    // The model is a command-line choice (`--model`).
    return { args: i.model ? ["--model", i.model] : [], env: {}, files: [], sessionEffort: i.effort };
  },
};
