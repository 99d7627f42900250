/** Cursor's agent CLI in ACP mode (`cursor-agent acp`). From its documentation; not run in CI. */
import type { Preset } from "./types.js";

export const cursor: Preset = {
  name: "cursor",
  title: "Cursor Agent",
  command: "cursor-agent",
  args: ["acp"],
  install: "curl https://cursor.com/install -fsS | bash",
  versionArgs: ["--version"],
  keys: ["CURSOR_API_KEY"],
  needs: "CURSOR_API_KEY (from the Cursor dashboard)",
  verified: "docs",
  caveats: "Talks only to Cursor's service: agent.provider does not apply, and doctor cannot show its tools offline.",
  advice: { dropped: "Cursor started without the bridge's MCP server; check agent.stderr lines in the log" },
  launch(i) {
    return { args: i.model ? ["--model", i.model] : [], env: {}, files: [], sessionEffort: i.effort };
  },
};
