/** The agent as the user named it (agent.command or the preset's, and its arguments), for logs and messages. */
import { presetFor } from "../presets/index.js";
import { DEFAULT_AGENT_COMMAND, type Config } from "./schema.js";

export function agentDisplay(cfg: Config["agent"]): string {
  const preset = presetFor(cfg.preset);
  return [cfg.command ?? preset?.command ?? DEFAULT_AGENT_COMMAND, ...(cfg.args ?? preset?.args ?? [])].join(" ");
}
