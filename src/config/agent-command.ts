/**
 * The agent command `run` and `doctor` start, resolved from `agent.command`, and the
 * environment the stop gates add to it when the agent enforces them itself.
 */
import { cliPath } from "../base/cli-path.js";
import type { Enforce } from "./enforce.js";
import type { Config } from "./schema.js";

/** `agent.command: buzz-bridge` runs this very installation (the demo agent), wherever it lives. */
export function resolveAgentCommand(cfg: Config["agent"]): { command: string; args: string[] } {
  if (cfg.command !== "buzz-bridge") return { command: cfg.command, args: cfg.args };
  return { command: process.execPath, args: [cliPath(), ...cfg.args] };
}

/**
 * With `gates.enforce: agent` the agent runs the hooks itself (buzz-agent): its rejection
 * budget is `gates.max_rejections` too, unless agent.env sets its own.
 */
export function agentGateEnv(cfg: Config, enforce: Enforce): Record<string, string> {
  if (enforce !== "agent") return cfg.agent.env;
  return { BUZZ_AGENT_STOP_MAX_REJECTIONS: String(cfg.gates.max_rejections), ...cfg.agent.env };
}
