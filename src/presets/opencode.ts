/** opencode in ACP mode (`opencode acp`). Verified offline in CI (test/agent-preset-opencode.test.ts). */
import { trimBase, type Preset } from "./types.js";

/** The provider's id in opencode's config; models are named `<id>/<model>`. */
const PROVIDER_ID = "bridge";

export const opencode: Preset = {
  name: "opencode",
  title: "opencode",
  command: "opencode",
  args: ["acp"],
  install: "npm install -g opencode-ai",
  versionArgs: ["--version"],
  keys: ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "OPENCODE_API_KEY"],
  loginFiles: [".local/share/opencode/auth.json"],
  needs: "the key of the model's provider (ANTHROPIC_API_KEY for anthropic/…, OPENAI_API_KEY with agent.provider)",
  wire: "openai-chat",
  providerNeedsModel: true,
  verified: "ci",
  caveats:
    "opencode fetches its plugin package (@opencode-ai/plugin) from the npm registry into its config folder at every start; no setting turns that off. Offline it fails quietly.",
  advice: { dropped: "opencode started without the bridge's MCP server; check agent.stderr lines in the log" },
  launch(i) {
    const env: Record<string, string> = {
      // A daemon: no models.dev download, no self-update, no LSP downloads, no share links.
      OPENCODE_DISABLE_MODELS_FETCH: "1",
      OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
      OPENCODE_DISABLE_SHARE: "1",
    };
    if (i.provider?.model) {
      // An OpenAI-compatible provider of the bridge's; the key is read from the environment when used.
      env.OPENCODE_CONFIG_CONTENT = JSON.stringify({
        provider: {
          [PROVIDER_ID]: {
            npm: "@ai-sdk/openai-compatible",
            name: "agent.provider",
            options: { baseURL: trimBase(i.provider.base_url), apiKey: "{env:OPENAI_API_KEY}" },
            models: { [i.provider.model]: { name: i.provider.model } },
          },
        },
        model: `${PROVIDER_ID}/${i.provider.model}`,
      });
      return { args: [], env, files: [], sessionEffort: i.effort };
    }
    // agent.model (`provider/model`, e.g. anthropic/claude-sonnet-4-5): a session config option.
    return { args: [], env, files: [], sessionModel: i.model, sessionEffort: i.effort };
  },
};
