/**
 * The pool's options as a plain object (kept apart from config so the pool stays
 * generic), how to build them from `Config['agent']`, and what the pool reports.
 */
import type { Config } from "../config/schema.js";
import type { Logger } from "../base/log.js";
import type { CircuitOptions, CircuitState } from "./circuit.js";
import type { PermissionPolicy } from "./permissions.js";
import type { McpSlot, ProxyCommand } from "./session.js";
import type { AgentSandbox, ChannelIsolation } from "./sandbox-plan.js";
import type { SandboxNetwork } from "./sandbox.js";
import type { PrivateNetwork } from "./sandbox-net.js";
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
  /**
   * Reserves a loopback endpoint for a process about to start whose session may take its
   * MCP slot over HTTP (`mcp.transport`): reserved before the process exists, so its
   * sandbox can be given exactly that port; released when the process exits. Given where
   * the process runs; undefined = none for this one. Not asked again once an agent of this
   * pool said at initialize that it does not speak MCP over HTTP. Default: none.
   */
  reserveEndpoint?: (where: {
    sandboxed: boolean;
    network: SandboxNetwork;
    /** The process's link directory (bound into its sandbox), when it has one. */
    linkDir?: string;
  }) => Promise<ProcessEndpoint | undefined>;
}

/** A loopback port held for one agent process (the daemon's HTTP MCP endpoint, proxy/http-endpoint.ts). */
export interface ProcessEndpoint {
  readonly port: number;
  /**
   * A unix socket serving the same endpoint, in the process's link directory: a sandbox with
   * a network of its own reaches the port through it (`sandbox-exec --forward`).
   */
  readonly socket?: string;
  close(): Promise<void>;
}

/** A command line to run beside the agent: an MCP server the daemon starts for the session. */
export interface ServerCommand {
  command: string;
  args: string[];
  /** Its working directory; default the session's. */
  cwd?: string;
}

/**
 * What the pool knows of a session's process when the session's MCP slot is chosen
 * (AcquireOptions.mcpEnv as a function).
 */
export interface McpSlotContext {
  /** The process's link directory (see linkRoot). */
  linkDir?: string;
  /** The process's reserved endpoint (see reserveEndpoint). */
  endpoint?: ProcessEndpoint;
  /** The agent advertised `mcpCapabilities.http` at initialize. */
  agentHttp: boolean;
  /** The process runs without any network (`agent.network: off` in its sandbox): only the stdio proxy reaches it. */
  offline: boolean;
  /** The session's working directory. */
  cwd: string;
  /** The environment the agent process has (allow-list, agent.env, the sandbox's HOME): what its own children would inherit. */
  env: Record<string, string>;
  /** How a server runs in the same sandbox as the agent's channel (bubblewrap around it), or as is when unsandboxed. */
  wrap(server: ServerCommand): { command: string; args: string[]; cwd: string; network?: PrivateNetwork };
}

/**
 * The pool options from config (durations are already milliseconds there); `command` and
 * `args` resolved (config/agent-command.ts), the preset's directory under `stateDir`.
 */
export function poolOptionsFromConfig(
  agent: Config["agent"] & { command: string; args: string[] },
  extra: Pick<
    AgentPoolOptions,
    "secret" | "hooksAgentEnforced" | "logger" | "proxy" | "initTimeoutMs" | "sandbox" | "linkRoot" | "reserveEndpoint"
  > & {
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
   * The session's MCP slot: as a record, the stdio proxy's environment (link address and
   * token); as a function, chosen once the process is known (see McpSlotContext).
   */
  mcpEnv: Record<string, string> | ((ctx: McpSlotContext) => McpSlot | Promise<McpSlot>);
  /** The channel's `agent.sandbox` / `agent.network` overrides. */
  isolation?: ChannelIsolation;
  standingContext?: string;
  /** Reopen this session after a restart when the agent supports resume/load. */
  previousSessionId?: string;
  /** The session's title, where the agent accepts one. */
  title?: string;
  /**
   * The session comes back held (AgentSession.hold) for the caller's turn: no other scope's
   * acquire closes it to make room before the caller's unhold().
   */
  hold?: boolean;
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
