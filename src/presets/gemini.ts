/** Gemini CLI in ACP mode (`gemini --acp`). Verified offline in CI (test/agent-preset-gemini.test.ts). */
import { trimBase, type Preset } from "./types.js";

export const gemini: Preset = {
  name: "gemini",
  title: "Gemini CLI",
  command: "gemini",
  args: ["--acp"],
  install: "npm install -g @google/gemini-cli",
  versionArgs: ["--version"],
  keys: ["GEMINI_API_KEY", "GOOGLE_API_KEY"],
  loginFiles: [".gemini/oauth_creds.json"],
  needs: "GEMINI_API_KEY",
  wire: "gemini",
  providerNeedsModel: true,
  verified: "ci",
  caveats:
    "After a restart, Gemini CLI 0.61 sometimes cannot reopen a thread's session (session/load answers an internal error in some runs of the offline suite): the bridge then logs agent.session_resume_failed and starts the thread's session over, with its history from the relay.",
  advice: {
    dropped:
      "Gemini CLI drops a session's MCP servers in a folder it does not trust, silently; the preset sets GEMINI_CLI_TRUST_WORKSPACE=true, so remove it from agent.env",
  },
  launch(i) {
    // The sandbox cwd is a folder Gemini has never seen: untrusted, it would drop the session's
    // MCP servers (and refuse yolo mode) without a word.
    const env: Record<string, string> = { GEMINI_CLI_TRUST_WORKSPACE: "true" };
    if (i.provider) env.GOOGLE_GEMINI_BASE_URL = trimBase(i.provider.base_url);
    // The model goes on the command line: without one, a router first asks a small model for a
    // JSON verdict, which a gateway serving one model cannot give (Gemini retries for minutes).
    const model = i.provider?.model ?? i.model;
    return { args: model ? ["-m", model] : [], env, files: [], sessionEffort: i.effort };
  },
};
