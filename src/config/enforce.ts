/**
 * Who enforces stop gates, resolved from `gates.enforce`, and the limit that follows when
 * the agent does: buzz-agent waits 2.5 s for a hook answer and then goes on without it, so
 * a merged `_Stop` allowed to take that long could be dropped (docs/protocol.md, hooks).
 */
import { basename } from "node:path";
import { agentDisplay } from "./agent-display.js";
import type { Config } from "./schema.js";

export type Enforce = "bridge" | "agent" | "off";

/** buzz-agent's own wait for a hook call, in ms. */
const AGENT_HOOK_TIMEOUT_MS = 2500;

/** `auto` means the agent enforces when it calls hooks itself (buzz-agent). */
export function resolveEnforce(cfg: Pick<Config, "gates" | "agent">): Enforce {
  const e = cfg.gates.enforce;
  if (e !== "auto") return e;
  return /buzz-agent/.test(basename(agentDisplay(cfg.agent).split(" ")[0]!)) ? "agent" : "bridge";
}

/** Why `mcp.hook_deadline` is unusable with this config, or undefined when it is fine. */
export function hookDeadlineProblem(cfg: Pick<Config, "gates" | "agent" | "mcp">): string | undefined {
  if (resolveEnforce(cfg) !== "agent" || cfg.mcp.hook_deadline < AGENT_HOOK_TIMEOUT_MS) return undefined;
  return `${cfg.mcp.hook_deadline} ms is not below buzz-agent's own ${AGENT_HOOK_TIMEOUT_MS} ms wait for a hook answer (${notTheBridge(cfg)}): the agent would give up before the merged _Stop arrives and end the turn ungated; set it below 2.5s (the default is 2s)`;
}

/**
 * Why a `hold_replies` server cannot hold anything with this config, or undefined: posts are
 * held until the bridge sees the gate allow the turn to end, which it sees only when it
 * enforces the stop gates itself. Elsewhere the posts would go out unheld, the opposite of
 * what the key asks.
 */
export function holdRepliesProblem(cfg: Pick<Config, "gates" | "agent" | "mcp">, server: string): string | undefined {
  if (resolveEnforce(cfg) === "bridge" || !cfg.mcp.servers[server]?.hold_replies) return undefined;
  return `hold_replies: true holds the agent's posts until the bridge sees this gate allow the turn to end, but ${notTheBridge(cfg)}: its posts would go out unheld; set gates.enforce: bridge, or remove hold_replies`;
}

/** Why the bridge does not enforce the stop gates with this config, for a refusal's words. */
function notTheBridge(cfg: Pick<Config, "gates" | "agent">): string {
  return cfg.gates.enforce === "auto"
    ? "gates.enforce is auto and the agent is buzz-agent, so the agent calls the hooks"
    : `gates.enforce is ${resolveEnforce(cfg)}`;
}
