/**
 * A preset applied to one agent process: the arguments and environment the pool starts it
 * with, and the settings files it writes first. What the `agent` section says itself wins
 * over the preset: `agent.command` replaces its command, `agent.args` its own arguments (those
 * derived from agent.model, agent.effort and agent.provider still follow), and `agent.env`
 * is laid over its environment variable by variable.
 */
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { PRESETS } from "./table.js";
import type { Preset, PresetInput, PresetLaunch, PresetName } from "./types.js";

export function presetFor(name: PresetName | undefined): Preset | undefined {
  return name === undefined ? undefined : PRESETS[name];
}

/** Where an agent run without the sandbox keeps the preset's files: the bridge's state, not the operator's HOME. */
export function presetDir(stateDir: string, name: PresetName): string {
  return join(stateDir, "presets", name);
}

export interface AgentLaunchSpec extends PresetLaunch {
  /** The preset's (or agent.args') arguments, then the launch's. */
  argv: string[];
}

/** Runs the preset's launch for one process and writes its files (mode 0600) under `input.dir`. */
export function agentLaunch(preset: Preset, input: PresetInput, baseArgs: string[] | undefined): AgentLaunchSpec {
  const launch = preset.launch(input);
  const root = resolve(input.dir);
  for (const f of launch.files) {
    const path = resolve(root, f.path);
    // A preset names paths of its own, but a slip must not write outside the directory.
    if (!path.startsWith(root + sep)) throw new Error(`preset ${preset.name} names a file outside its directory: ${f.path}`);
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    writeFileSync(path, f.content, { mode: 0o600 });
    chmodSync(path, 0o600);
  }
  return { ...launch, argv: [...(baseArgs ?? preset.args), ...launch.args] };
}
