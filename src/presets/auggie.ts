/** Augment's CLI in ACP mode (`auggie --acp`). From its documentation; not run in CI. */
import type { Preset } from "./types.js";

export const auggie: Preset = {
  name: "auggie",
  title: "Auggie (Augment Code)",
  command: "auggie",
  args: ["--acp"],
  install: "npm install -g @augmentcode/auggie",
  versionArgs: ["--version"],
  keys: ["AUGMENT_SESSION_AUTH"],
  loginFiles: [".augment/session.json"],
  needs: "AUGMENT_SESSION_AUTH (`auggie token print` after `auggie login`)",
  verified: "docs",
  caveats: "Talks only to Augment's service: agent.provider does not apply, and doctor cannot show its tools offline.",
  advice: { dropped: "Auggie started without the bridge's MCP server; check agent.stderr lines in the log" },
  launch(i) {
    return { args: i.model ? ["--model", i.model] : [], env: {}, files: [], sessionEffort: i.effort };
  },
};
