/** What the other folders use of the agent runner (docs/architecture.md §3, step 5). */
export {
  AgentPool,
  poolOptionsFromConfig,
  type AgentPoolOptions,
  type AcquireOptions,
  type AgentSpawned,
  type McpSlot,
  type McpSlotContext,
  type ProcessEndpoint,
} from "./pool.js";
export { AgentSession } from "./session.js";
export { AgentProcess } from "./process.js";
export type { AskOwner } from "./permissions.js";
export { agentEnvironment } from "./env.js";
export { channelDirName, channelSlug, type ChannelRef } from "./cwd.js";
export { migrateChannelDirs, migrateChannelDirsLogged, type DirMigration } from "./dir-migration.js";
export { AgentSandbox } from "./sandbox-plan.js";
export { probeBubblewrap, retrySandboxSetup, BUBBLEWRAP_ADVICE } from "./sandbox.js";
export { probeAgent } from "./probe.js";
export * from "./errors.js";
export { SessionUsage, type TurnUsage } from "./usage.js";
export { offeredSettings } from "./session-settings.js";
export { presetInstall, type PresetInstall } from "./preset-install.js";
export { classifyProviderError, resetOf, type ProviderError, type ProviderErrorClass } from "./provider-error.js";
