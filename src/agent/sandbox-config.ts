/**
 * The agent sandbox a loaded configuration asks for, shared by `run` and `doctor`: hidden
 * are the paths the configuration names for the bridge itself (config file, key file,
 * state directory) and the directory holding the channels' working directories.
 */
import { realpathSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { cliPath } from "../base/cli-path.js";
import type { Logger } from "../base/log.js";
import type { LoadedConfig } from "../config/load.js";
import { CHANNEL_PLACEHOLDER, spareCwd } from "./cwd.js";
import { AgentSandbox } from "./sandbox-plan.js";
import { loopbackPortsIn } from "./loopback.js";

export function sandboxFor(loaded: LoadedConfig, logger?: Logger): AgentSandbox {
  const cfg = loaded.config;
  const hide = bridgePaths(loaded).map((p) => p.path);
  const install = realpathSync(dirname(dirname(cliPath())));
  return new AgentSandbox(
    {
      mode: cfg.agent.sandbox,
      network: cfg.agent.network,
      binds: cfg.agent.sandbox_binds,
      hide,
      stateDir: cfg.state_dir,
      install,
      loopbackPorts: configuredLoopbackPorts(loaded),
      team: loaded.team?.exposed.length
        ? { exposed: loaded.team.exposed, allowUnsandboxed: cfg.team?.allow_unsandboxed ?? false }
        : undefined,
    },
    logger,
  );
}

/**
 * The host loopback ports the configuration points agents or their MCP servers at (in
 * `agent.env`, `agent.args`, `agent.provider.base_url` — a preset maps it into the agent's
 * own settings —, a server's `env` or `args`): the ones a sandboxed agent may still reach
 * (loopback.ts). The daemon's own `http.listen` port is never among them.
 */
export function configuredLoopbackPorts(loaded: LoadedConfig): number[] {
  const cfg = loaded.config;
  const named = [
    ...Object.values(cfg.agent.env),
    ...(cfg.agent.args ?? []),
    ...(cfg.agent.provider ? [cfg.agent.provider.base_url] : []),
    ...Object.values(cfg.mcp.servers).flatMap((s) => [...Object.values(s.env), ...s.args]),
  ];
  const own = cfg.http ? Number(/:(\d{1,5})$/.exec(cfg.http.listen)?.[1] ?? 0) : 0;
  return loopbackPortsIn(named, own ? [own] : []);
}

/** The paths the configuration names for the bridge itself, which a sandboxed agent must not see. */
export function bridgePaths(loaded: LoadedConfig): Array<{ label: string; path: string }> {
  const cfg = loaded.config;
  return [
    { label: "config file", path: loaded.file },
    ...(cfg.identity.secret_key_file ? [{ label: "key file", path: cfg.identity.secret_key_file }] : []),
    { label: "state directory", path: cfg.state_dir },
    ...(cfg.agent.cwd.includes(CHANNEL_PLACEHOLDER)
      ? [{ label: "channels' working directories", path: spareCwd(cfg.agent.cwd, false) }]
      : []),
    // The bridge's other files: not secrets, but the bridge's, not the agent's.
    ...(cfg.identity.auth_tag_file ? [{ label: "auth tag file", path: resolve(dirname(loaded.file), cfg.identity.auth_tag_file) }] : []),
    ...(cfg.heartbeat?.prompt_file ? [{ label: "heartbeat prompt file", path: cfg.heartbeat.prompt_file }] : []),
    ...(cfg.relay.seed ? [{ label: "dev relay seed", path: cfg.relay.seed }] : []),
    // In a team: the daemon's state directory (every agent's state) and the other agents' files.
    ...(loaded.team?.hide ?? []),
  ];
}
