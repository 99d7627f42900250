/** Goose in ACP mode (`goose acp`). From Goose's documentation; not run in CI (no npm package). */
import { trimBase, type Preset } from "./types.js";

export const goose: Preset = {
  name: "goose",
  title: "Goose",
  command: "goose",
  args: ["acp"],
  install: "curl -fsSL https://github.com/block/goose/releases/download/stable/download_cli.sh | CONFIGURE=false bash",
  versionArgs: ["--version"],
  keys: ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY", "OPENROUTER_API_KEY"],
  needs:
    "GOOSE_PROVIDER and GOOSE_MODEL in agent.env with that provider's key (e.g. ANTHROPIC_API_KEY), or agent.provider with OPENAI_API_KEY",
  wire: "openai-chat",
  providerNeedsModel: true,
  verified: "docs",
  advice: { dropped: "Goose started without the bridge's MCP server; check agent.stderr lines in the log" },
  launch(i) {
    // A daemon has no desktop keyring: secrets come from the environment.
    const env: Record<string, string> = { GOOSE_DISABLE_KEYRING: "1" };
    if (i.provider) {
      // Goose's OpenAI provider pointed at the endpoint: host and path are separate settings.
      const url = new URL(trimBase(i.provider.base_url));
      env.GOOSE_PROVIDER = "openai";
      env.OPENAI_HOST = url.origin;
      env.OPENAI_BASE_PATH = `${url.pathname.replace(/^\/+/, "")}/chat/completions`.replace(/^\//, "");
    }
    // Goose selects its model from the environment, not over ACP.
    const model = i.provider?.model ?? i.model;
    if (model) env.GOOSE_MODEL = model;
    if (i.effort) env.GOOSE_THINKING_EFFORT = i.effort;
    return { args: [], env, files: [] };
  },
};
