/**
 * Whether a preset's agent is installed here: its command on PATH and, where the command has
 * a version flag, the version it prints. For `buzz-bridge agents` and `doctor`.
 */
import { execFile } from "node:child_process";
import type { Preset } from "../presets/index.js";
import { resolveCommand } from "./sandbox.js";

export interface PresetInstall {
  /** Where the command was found; undefined: not installed. */
  path?: string;
  /** The first line it printed for its version flag, when it has one and answered in time. */
  version?: string;
}

/** Some CLIs (Gemini's) start a second Node process to print their version: seconds on a busy machine. */
const VERSION_TIMEOUT_MS = 30_000;

export async function presetInstall(preset: Preset, command = preset.command, pathEnv = process.env.PATH ?? ""): Promise<PresetInstall> {
  const path = resolveCommand(command, pathEnv);
  if (!path || !preset.versionArgs) return { path };
  const version = await new Promise<string | undefined>((resolve) => {
    execFile(
      path,
      preset.versionArgs!,
      { timeout: VERSION_TIMEOUT_MS, env: { PATH: pathEnv, HOME: process.env.HOME ?? "/" } },
      (err, stdout) => {
        // The first line that holds a version number (some print a banner first).
        const line = String(stdout ?? "")
          .split("\n")
          .map((l) => l.trim())
          .find((l) => /\d+\.\d+/.test(l));
        resolve(err && !line ? undefined : line?.slice(0, 80));
      },
    );
  });
  return { path, version };
}
