/**
 * The agent presets (docs/agents.md), one small file each, by name.
 */
import { auggie } from "./auggie.js";
import { claude } from "./claude.js";
import { cline } from "./cline.js";
import { codex } from "./codex.js";
import { copilot } from "./copilot.js";
import { cursor } from "./cursor.js";
import { gemini } from "./gemini.js";
import { goose } from "./goose.js";
import { kilo } from "./kilo.js";
import { opencode } from "./opencode.js";
import { pi } from "./pi.js";
import { qwen } from "./qwen.js";
import type { Preset, PresetName } from "./types.js";

export const PRESETS: Readonly<Record<PresetName, Preset>> = {
  claude,
  codex,
  gemini,
  opencode,
  qwen,
  goose,
  copilot,
  kilo,
  cline,
  cursor,
  auggie,
  pi,
};
