/** Cline CLI in ACP mode (`cline --acp`). From its documentation; not run in CI. */
import { join } from "node:path";
import type { Preset } from "./types.js";

export const cline: Preset = {
  name: "cline",
  title: "Cline CLI",
  command: "cline",
  args: ["--acp"],
  install: "npm install -g cline",
  versionArgs: ["--version"],
  keys: ["ANTHROPIC_API_KEY", "CLINE_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY"],
  needs: "ANTHROPIC_API_KEY (the default provider), or CLINE_API_KEY / OPENAI_API_KEY / OPENROUTER_API_KEY with `-P` in agent.args",
  verified: "docs",
  caveats: "Provider endpoints are set with `cline auth --baseurl`; agent.provider does not apply.",
  advice: { dropped: "Cline started without the bridge's MCP server; check agent.stderr lines in the log" },
  launch(i) {
    return {
      // Its own state in the bridge's directory, not ~/.cline of the operator.
      args: [
        "--data-dir",
        join(i.dir, ".cline", "data"),
        ...(i.model ? ["--model", i.model] : []),
        ...(i.effort ? ["--thinking", i.effort] : []),
      ],
      env: {},
      files: [],
    };
  },
};
