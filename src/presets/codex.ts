/**
 * Codex through its ACP adapter, `codex-acp` (@zed-industries/codex-acp; its npm launcher
 * runs the platform binary with spawnSync, so the bridge stops the whole process group).
 * Verified offline in CI (test/agent-preset-codex.test.ts).
 *
 * Settings go as `-c key=value` overrides (TOML values), so the operator's own
 * ~/.codex/config.toml and login stay as they are when the agent runs unsandboxed.
 */
import { join } from "node:path";
import { trimBase, type Preset } from "./types.js";

/** TOML basic strings accept JSON's string escapes. */
const toml = (s: string) => JSON.stringify(s);

/** The provider's id in Codex's `model_providers` table. */
const PROVIDER_ID = "buzz_bridge";

export const codex: Preset = {
  name: "codex",
  title: "Codex (codex-acp)",
  command: "codex-acp",
  args: [],
  install: "npm install -g @zed-industries/codex-acp",
  keys: ["OPENAI_API_KEY", "CODEX_API_KEY"],
  loginFiles: [".codex/auth.json"],
  needs: "OPENAI_API_KEY (or a `codex login` with agent.auth_method: chatgpt)",
  wire: "openai-responses",
  providerNeedsModel: true,
  // Without a provider Codex asks the client to authenticate before session/new; the key
  // comes from OPENAI_API_KEY. A provider of the bridge's carries its own key variable.
  authMethod: (provider) => (provider ? undefined : "openai-api-key"),
  verified: "ci",
  caveats:
    "Codex asks permission for every MCP tool call, whatever its approval policy: keep agent.permissions: allow (the default) or ask-owner.",
  advice: {
    search: "Codex grouped the bridge's tools behind tool_search; list fewer MCP servers for the channel (mcp: in the channel entry)",
    dropped: "Codex started without the bridge's MCP server; check agent.stderr lines in the log for an MCP start error",
  },
  launch(i) {
    const args: string[] = [];
    const set = (key: string, value: string) => args.push("-c", `${key}=${value}`);
    const files: Array<{ path: string; content: string }> = [];
    if (i.provider) {
      // Codex ignores OPENAI_BASE_URL for its built-in provider; a provider of its own, speaking
      // the Responses API, is what points it elsewhere.
      set("model_provider", toml(PROVIDER_ID));
      set(
        `model_providers.${PROVIDER_ID}`,
        `{ name = ${toml("agent.provider")}, base_url = ${toml(trimBase(i.provider.base_url))}, wire_api = "responses", env_key = "OPENAI_API_KEY" }`,
      );
      if (i.provider.model) {
        set("model", toml(i.provider.model));
        // A model Codex has no metadata for makes it post "Model metadata for … not found" as
        // agent text (which a text-only turn would publish). A catalog naming the model keeps
        // Codex's default instructions and stops the warning.
        const catalog = "codex/models.json";
        files.push({ path: catalog, content: JSON.stringify({ models: [catalogEntry(i.provider.model)] }, null, 2) });
        set("model_catalog_json", toml(join(i.dir, catalog)));
      }
    }
    if (i.effort) set("model_reasoning_effort", toml(i.effort));
    // agent.model without a provider: Codex's own models, offered as a session config option.
    return { args, env: {}, files, sessionModel: i.provider?.model ? undefined : i.model };
  },
};

/** The fields Codex requires of a model catalog entry; empty instructions keep its default prompt. */
function catalogEntry(slug: string) {
  return {
    slug,
    display_name: slug,
    supported_reasoning_levels: [],
    shell_type: "shell_command",
    visibility: "list",
    supported_in_api: true,
    priority: 0,
    base_instructions: "",
    supports_reasoning_summaries: false,
    support_verbosity: false,
    truncation_policy: { mode: "tokens", limit: 10_000 },
    supports_parallel_tool_calls: true,
    experimental_supported_tools: [],
  };
}
