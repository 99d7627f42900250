/**
 * Claude Code through its ACP adapter, `claude-agent-acp` (@agentclientprotocol/claude-agent-acp).
 * Verified offline in CI (test/agent-preset-claude.test.ts).
 */
import { trimBase, type Preset } from "./types.js";

export const claude: Preset = {
  name: "claude",
  title: "Claude Code (claude-agent-acp)",
  command: "claude-agent-acp",
  args: [],
  install: "npm install -g @agentclientprotocol/claude-agent-acp",
  versionArgs: ["--version"],
  keys: ["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"],
  loginFiles: [".claude/.credentials.json"],
  needs: "ANTHROPIC_API_KEY (or CLAUDE_CODE_OAUTH_TOKEN from `claude setup-token`)",
  wire: "anthropic",
  // The default `auto` mode asks a classifier model before each tool call, and blocks the
  // call when that answer does not parse (a gateway that serves one model): `default` asks the
  // client instead, and the bridge answers by agent.permissions.
  mode: "default",
  verified: "ci",
  advice: {
    search:
      "Claude lists MCP tools behind its ToolSearch step unless ENABLE_TOOL_SEARCH=false; the preset sets it, so remove ENABLE_TOOL_SEARCH from agent.env",
    dropped: "Claude started without the bridge's MCP server; check the agent's stderr in the log (agent.stderr) for an MCP error",
  },
  launch(i) {
    const env: Record<string, string> = {
      // Otherwise MCP tools are deferred: not in the model's tool list, only named behind ToolSearch.
      ENABLE_TOOL_SEARCH: "false",
      // A daemon: no update checks, no telemetry, no side traffic besides the model API.
      DISABLE_AUTOUPDATER: "1",
      DISABLE_TELEMETRY: "1",
      CLAUDE_CODE_MAX_RETRIES: "2",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      // After each turn the adapter asks the model for a predicted follow-up prompt, with the
      // turn's whole conversation and every tool: a model request per mention that no Buzz
      // client shows, billed to the user, and a second run of the turn's first tool call.
      CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION: "false",
    };
    // As root, Claude refuses to start a session that may skip permissions unless told it is sandboxed.
    if (i.root) env.IS_SANDBOX = "1";
    if (i.provider) {
      env.ANTHROPIC_BASE_URL = trimBase(i.provider.base_url);
      if (i.provider.model) {
        // Every model Claude would pick (main, the small one for titles and summaries) is the gateway's.
        for (const name of [
          "ANTHROPIC_MODEL",
          "ANTHROPIC_DEFAULT_OPUS_MODEL",
          "ANTHROPIC_DEFAULT_SONNET_MODEL",
          "ANTHROPIC_DEFAULT_HAIKU_MODEL",
          "ANTHROPIC_SMALL_FAST_MODEL",
        ])
          env[name] = i.provider.model;
      }
    }
    // agent.model / agent.effort: the adapter offers both as session config options (validated there).
    return { args: [], env, files: [], sessionModel: i.provider?.model ? undefined : i.model, sessionEffort: i.effort };
  },
};
