/**
 * pi through its ACP adapter `pi-acp` (which runs `pi --mode rpc`). From its documentation;
 * not run in CI. pi-acp accepts the session's MCP servers but does not hand them to pi, so the
 * agent never sees the bridge's tools: replies arrive through the bridge's final-text fallback.
 */
import { join } from "node:path";
import type { Preset } from "./types.js";

export const pi: Preset = {
  name: "pi",
  title: "pi (pi-acp)",
  command: "pi-acp",
  args: [],
  install: "npm install -g @mariozechner/pi-coding-agent pi-acp",
  keys: ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY"],
  needs: "the key of pi's model provider (ANTHROPIC_API_KEY by default)",
  verified: "docs",
  caveats:
    "pi-acp does not pass MCP servers to pi: the bridge's tools (send_message, the gates) are not available, replies come through reply_fallback: final_text.",
  advice: {
    dropped:
      "pi-acp does not pass the session's MCP servers to pi: keep reply_fallback: final_text for this agent, or add pi's MCP adapter extension to pi",
  },
  launch(i) {
    return {
      args: [],
      // pi's settings and sessions in the bridge's directory; quiet start, no version check.
      env: { PI_CODING_AGENT_DIR: join(i.dir, ".pi", "agent"), PI_SKIP_VERSION_CHECK: "1" },
      files: [{ path: ".pi/agent/settings.json", content: JSON.stringify({ quietStartup: true }, null, 2) }],
      sessionModel: i.model,
      sessionEffort: i.effort,
    };
  },
};
