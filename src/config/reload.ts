/**
 * What a reload (SIGHUP) may change: the new file against the running config. Policy, team
 * instructions, channels and MCP lists apply to new turns; the identity, the relay and the
 * state directory need a restart (the reload is refused); agent settings, the owner, the
 * heartbeat and the relay frame quota keep their running values until a restart.
 */
import type { Config } from "./schema.js";

export interface RunningConfig {
  pubkey: string;
  config: Config;
}

export type ReloadPlan =
  /** Refused: these settings changed and only a restart applies them. */
  | { ok: false; needsRestart: string[] }
  /** The config to run with now; `deferred` when some changes wait for a restart. */
  | { ok: true; config: Config; deferred: boolean };

export function planReload(running: RunningConfig, next: RunningConfig): ReloadPlan {
  const now = running.config;
  const needsRestart: string[] = [];
  if (next.pubkey !== running.pubkey) needsRestart.push("identity");
  if (next.config.relay.url !== now.relay.url) needsRestart.push("relay.url");
  if (next.config.state_dir !== now.state_dir) needsRestart.push("state_dir");
  if (needsRestart.length) return { ok: false, needsRestart };
  const deferred =
    JSON.stringify(next.config.agent) !== JSON.stringify(now.agent) ||
    next.config.identity.owner !== now.identity.owner ||
    JSON.stringify(next.config.heartbeat) !== JSON.stringify(now.heartbeat) ||
    JSON.stringify(next.config.relay.frame_quota) !== JSON.stringify(now.relay.frame_quota);
  return {
    ok: true,
    deferred,
    config: {
      ...next.config,
      agent: now.agent,
      identity: now.identity,
      heartbeat: now.heartbeat,
      relay: { ...next.config.relay, frame_quota: now.relay.frame_quota },
    },
  };
}
