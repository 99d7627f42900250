/**
 * Qwen Code in ACP mode (`qwen --acp`), on an OpenAI-compatible endpoint. Verified locally
 * (0.24) against the probe model, not in CI.
 *
 * Its settings file lives in QWEN_HOME, pointed at the bridge's directory for the agent.
 */
import { join } from "node:path";
import { trimBase, type Preset } from "./types.js";

export const qwen: Preset = {
  name: "qwen",
  title: "Qwen Code",
  command: "qwen",
  args: ["--acp"],
  install: "npm install -g @qwen-code/qwen-code",
  versionArgs: ["--version"],
  keys: ["OPENAI_API_KEY"],
  needs: "OPENAI_API_KEY and agent.provider (base_url of DashScope, OpenRouter, LiteLLM, Ollama …, and a model)",
  wire: "openai-chat",
  providerNeedsModel: true,
  verified: "local",
  caveats: "Qwen Code has a built-in tool named send_message of its own (for its sub-agents); the bridge's is mcp__buzz__send_message.",
  advice: {
    search:
      "Qwen Code lists MCP tools behind its tool_search unless that tool is denied; the preset denies it in the settings it writes (QWEN_HOME), so do not set QWEN_HOME in agent.env",
    dropped: "Qwen Code started without the bridge's MCP server; check agent.stderr lines in the log",
  },
  launch(i) {
    const settings = {
      // With tool_search unavailable Qwen Code puts every MCP tool in the model's tool list;
      // otherwise the bridge's tools hide behind a search step the model has to know to take.
      permissions: { deny: ["tool_search"] },
      // An API key from OPENAI_API_KEY, not Qwen's OAuth login (which a daemon cannot do).
      security: { auth: { selectedType: "openai" } },
    };
    const model = i.provider?.model ?? i.model;
    return {
      args: [...(i.provider ? ["--openai-base-url", trimBase(i.provider.base_url)] : []), ...(model ? ["-m", model] : [])],
      env: {
        QWEN_HOME: join(i.dir, ".qwen"),
        // Older releases discover the session's MCP servers in the background and send the
        // first prompt without them unless told to wait.
        QWEN_CODE_LEGACY_MCP_BLOCKING: "1",
      },
      files: [{ path: ".qwen/settings.json", content: JSON.stringify(settings, null, 2) }],
      sessionEffort: i.effort,
    };
  },
};
