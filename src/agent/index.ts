/** The agent runner's public surface (see the report in the commit log for how to use it). */
export {
  AgentPool,
  poolOptionsFromConfig,
  type AgentPoolOptions,
  type AcquireOptions,
  type PoolStats,
  type AgentPoolEvents,
  type AgentCrash,
  type AgentSpawned,
} from "./pool.js";
export {
  AgentSession,
  PROXY_SERVER_NAME,
  defaultProxyCommand,
  type SessionOptions,
  type ProxyCommand,
  type StandingContextVia,
} from "./session.js";
export { AgentProcess, ACP_PROTOCOL_VERSION, type AgentProcessOptions, type AgentProcessEvents, type ExitInfo } from "./process.js";
export type { TurnResult, PromptOptions, TurnLimits } from "./turn-control.js";
export type { AskOwner, PermissionPolicy } from "./permissions.js";
export { agentEnvironment, secretForms, SECRET_ENV_NAMES } from "./env.js";
export { agentCwd, channelSlug, spareCwd, CHANNEL_PLACEHOLDER } from "./cwd.js";
export { AgentSandbox, SandboxError, type ChannelIsolation, type SandboxPolicy, type SandboxLaunch } from "./sandbox-plan.js";
export {
  probeBubblewrap,
  bubblewrapArgs,
  hiddenPaths,
  BUBBLEWRAP_ADVICE,
  type BubblewrapProbe,
  type SandboxMode,
  type NetworkMode,
  type SandboxBind,
} from "./sandbox.js";
export { probeAgent, type AgentProbe } from "./probe.js";
export * from "./errors.js";
export { STEER_METHOD, type SteerAnswer } from "./steering.js";
export { addUsage, SessionUsage, type TurnUsage } from "./usage.js";
export { offeredSettings, type OfferedSettings } from "./session-settings.js";
