/**
 * The agent command `run` and `doctor` start, resolved from `agent.command`, and the
 * environment the stop gates add to it when the agent enforces them itself.
 */
import { cliPath } from "../base/cli-path.js";
import { presetFor } from "../presets/index.js";
import type { Enforce } from "./enforce.js";
import { DEFAULT_AGENT_COMMAND, type Config } from "./schema.js";

export { agentDisplay } from "./agent-display.js";

/**
 * The command and base arguments: agent.command / agent.args, else the preset's, else
 * claude-agent-acp. `agent.command: buzz-bridge` runs this very installation (the demo
 * agent), wherever it lives. The preset's derived arguments follow at spawn (presets/apply.ts).
 */
export function resolveAgentCommand(cfg: Config["agent"]): { command: string; args: string[] } {
  const preset = presetFor(cfg.preset);
  const command = cfg.command ?? preset?.command ?? DEFAULT_AGENT_COMMAND;
  const args = cfg.args ?? preset?.args ?? [];
  if (command !== "buzz-bridge") return { command, args };
  return { command: process.execPath, args: [cliPath(), ...args] };
}

/**
 * With `gates.enforce: agent` the agent runs the hooks itself (buzz-agent): its rejection
 * budget is `gates.max_rejections` too, unless agent.env sets its own.
 */
export function agentGateEnv(cfg: Config, enforce: Enforce): Record<string, string> {
  if (enforce !== "agent") return cfg.agent.env;
  return { BUZZ_AGENT_STOP_MAX_REJECTIONS: String(cfg.gates.max_rejections), ...cfg.agent.env };
}
