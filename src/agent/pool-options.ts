/**
 * The pool's options as a plain object (kept apart from config so the pool stays
 * generic), how to build them from `Config['agent']`, and what the pool reports.
 */
import type { Config } from "../config/schema.js";
import type { Logger } from "../base/log.js";
import type { CircuitOptions, CircuitState } from "./circuit.js";
import type { PermissionPolicy } from "./permissions.js";
import type { ProxyCommand } from "./session.js";
import type { AgentSandbox, ChannelIsolation } from "./sandbox-plan.js";
import type { ChannelRef } from "./cwd.js";
import { presetDir, presetFor } from "../presets/index.js";
import type { PresetOptions } from "./preset-spawn.js";

export interface AgentPoolOptions extends PresetOptions {
  command: string;
  args: string[];
  /** `agent.env`, laid over the inherited allow-list. */
  env: Record<string, string>;
  /** `agent.cwd` template with `{channel}`. */
  cwd: string;
  /** Processes serving scopes at once (the spare is extra); default 4. */
  maxConcurrent: number;
  idleTimeoutMs: number;
  maxTurnMs: number;
  /** A scope's process with no turn for this long is closed; default 10 min. */
  idleCloseMs: number;
  cancelGraceMs: number;
  /** Keep one initialized process ready; default true. */
  warmSpare: boolean;
  permissions: PermissionPolicy;
  permissionTimeoutMs: number;
  mode?: string;
  /** `agent.model`, `agent.effort`, `agent.initial_message`: applied to every new session. */
  model?: string;
  effort?: string;
  initialMessage?: string;
  /** `agent.auth_method`: ACP authenticate after initialize. */
  authMethod?: string;
  /** `initialize` bound; default 30 s. */
  initTimeoutMs?: number;
  /** The bridge's secret key: kept out of the agent's environment and its stderr in logs. */
  secret?: Uint8Array | string[];
  /** gates.enforce resolved to `agent`: sets MCP_HOOK_SERVERS=buzz. */
  hooksAgentEnforced?: boolean;
  proxy?: ProxyCommand;
  circuit?: CircuitOptions;
  /** Grace for stdin-EOF and SIGTERM when closing a process; default 2 s. */
  closeGraceMs?: number;
  logger?: Logger;
  /** The environment the allow-list picks from; default process.env. */
  parentEnv?: NodeJS.ProcessEnv;
  /**
   * Each process gets a directory of its own here (mode 0700, removed when it exits) for its
   * session's link socket; acquire's `mcpEnv` function is given it. Default: none.
   */
  linkRoot?: string;
  /** Sandboxes processes per channel (see AgentSandbox); default none. */
  sandbox?: AgentSandbox;
}

/**
 * The pool options from config (durations are already milliseconds there); `command` and
 * `args` resolved (config/agent-command.ts), the preset's directory under `stateDir`.
 */
export function poolOptionsFromConfig(
  agent: Config["agent"] & { command: string; args: string[] },
  extra: Pick<AgentPoolOptions, "secret" | "hooksAgentEnforced" | "logger" | "proxy" | "initTimeoutMs" | "sandbox" | "linkRoot"> & {
    stateDir?: string;
  } = {},
): AgentPoolOptions {
  const { stateDir, ...rest } = extra;
  const preset = presetFor(agent.preset);
  return {
    command: agent.command,
    args: agent.args,
    preset,
    provider: agent.provider,
    presetDir: preset && stateDir ? presetDir(stateDir, preset.name) : undefined,
    env: agent.env,
    cwd: agent.cwd,
    maxConcurrent: agent.max_concurrent,
    idleTimeoutMs: agent.idle_timeout,
    maxTurnMs: agent.max_turn,
    idleCloseMs: agent.idle_close,
    cancelGraceMs: agent.cancel_grace,
    warmSpare: agent.warm_spare,
    permissions: agent.permissions,
    permissionTimeoutMs: agent.permission_timeout,
    mode: agent.mode ?? preset?.mode,
    authMethod: agent.auth_method ?? preset?.authMethod?.(agent.provider),
    model: agent.model,
    effort: agent.effort,
    initialMessage: agent.initial_message,
    ...rest,
  };
}

export interface AcquireOptions {
  /** The channel; `{channel}` in the cwd template becomes its directory name (cwd.ts `channelDirName`). */
  channel: ChannelRef;
  /** Overrides the cwd template (absolute path). */
  cwd?: string;
  /**
   * The proxy's environment for this session (link address and token); as a function it is
   * given the process's link directory (see AgentPoolOptions.linkRoot) once the process is known.
   */
  mcpEnv: Record<string, string> | ((linkDir: string | undefined) => Record<string, string> | Promise<Record<string, string>>);
  /** The channel's `agent.sandbox` / `agent.network` overrides. */
  isolation?: ChannelIsolation;
  standingContext?: string;
  /** Reopen this session after a restart when the agent supports resume/load. */
  previousSessionId?: string;
  /** The session's title, where the agent accepts one. */
  title?: string;
}

export interface PoolStats {
  /** Live agent processes, the spare included. */
  processes: number;
  busy: number;
  scopes: number;
  spareReady: boolean;
  spawns: number;
  crashes: number;
  circuit: CircuitState;
  circuitUntil?: number;
}
