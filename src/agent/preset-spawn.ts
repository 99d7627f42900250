/**
 * An agent preset (docs/agents.md) applied to one process the pool or `doctor` starts: its
 * arguments after the base ones, its environment under `agent.env`, its settings files written
 * into the bridge's directory for it (the sandbox HOME, else the preset's directory in the
 * state directory), and what is left for the ACP session settings to select.
 */
import { mkdirSync } from "node:fs";
import { agentLaunch, type Preset, type Provider } from "../presets/index.js";

export interface PresetOptions {
  preset?: Preset;
  /** `agent.provider`, mapped by the preset. */
  provider?: Provider;
  /** Where an unsandboxed process's preset files go (`<state_dir>/presets/<name>`). */
  presetDir?: string;
}

export interface PresetSpawn {
  args: string[];
  /** The preset's variables, to lay under agent.env. */
  env: Record<string, string>;
  /** agent.model / agent.effort as the ACP session settings should select them. */
  model?: string;
  effort?: string;
}

/** Without a preset: the arguments as they are, and agent.model / agent.effort for the session. */
export function presetSpawn(
  o: PresetOptions & { args: string[]; model?: string; effort?: string },
  sandboxHome: string | undefined,
): PresetSpawn {
  if (!o.preset) return { args: o.args, env: {}, model: o.model, effort: o.effort };
  const dir = sandboxHome ?? o.presetDir;
  if (!dir) throw new Error(`the ${o.preset.name} preset needs a directory for its settings (presetDir)`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const spec = agentLaunch(
    o.preset,
    { dir, sandboxed: sandboxHome !== undefined, root: process.getuid?.() === 0, model: o.model, effort: o.effort, provider: o.provider },
    o.args,
  );
  return { args: spec.argv, env: spec.env, model: spec.sessionModel, effort: spec.sessionEffort };
}
