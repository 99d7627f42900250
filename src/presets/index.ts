/**
 * The agent presets (docs/agents.md): `agent.preset: NAME` selects one of ./table.ts; ./apply.ts
 * turns it and the `agent` section into one process's launch.
 */
export { PRESETS } from "./table.js";
export { PRESET_NAMES, type Preset, type PresetInput, type PresetLaunch, type PresetName, type Provider, type Wire } from "./types.js";
export { presetFor, agentLaunch, presetDir, type AgentLaunchSpec } from "./apply.js";
