/**
 * The shape of an agent preset (docs/agents.md): what `agent.preset: NAME` fills in for an
 * ACP agent — its command and arguments, the environment and settings files that make it
 * see and call the bridge's MCP tools the first time, how `agent.model`, `agent.effort` and
 * `agent.provider` reach the agent's own settings, and what the user must supply.
 *
 * A preset is data plus one pure function (`launch`): it writes nothing itself. The pool
 * writes the files it returns into a directory of the bridge's (the channel's sandbox HOME,
 * or the preset's directory under the state directory), never the operator's own HOME.
 */

/** The model APIs a preset's `agent.provider.base_url` may speak (the probe model answers each). */
export type Wire = "anthropic" | "openai-responses" | "openai-chat" | "gemini";

export const PRESET_NAMES = [
  "claude",
  "codex",
  "gemini",
  "opencode",
  "qwen",
  "goose",
  "copilot",
  "kilo",
  "cline",
  "cursor",
  "auggie",
  "pi",
] as const;
export type PresetName = (typeof PRESET_NAMES)[number];

/** `agent.provider`: a gateway or self-hosted endpoint, mapped onto the preset's own settings. */
export interface Provider {
  base_url: string;
  model?: string;
}

export interface PresetInput {
  /**
   * A directory of the bridge's for this agent's settings files: the channel's sandbox HOME,
   * or `<state_dir>/presets/<name>` for an agent run without the sandbox. Paths in `files`
   * are relative to it; `env` may point the agent's config directory at it.
   */
  dir: string;
  /** The agent runs sandboxed, with `dir` as its HOME. */
  sandboxed: boolean;
  /** The bridge runs as root (Claude refuses its permission bypass as root unless told it is sandboxed). */
  root: boolean;
  model?: string;
  effort?: string;
  provider?: Provider;
}

export interface PresetLaunch {
  /** Arguments after the preset's own (`Preset.args`, or `agent.args` in their place). */
  args: string[];
  /** Laid under `agent.env`: the user's values win. */
  env: Record<string, string>;
  /** Written (mode 0600) before the agent starts; `path` is relative to PresetInput.dir. */
  files: Array<{ path: string; content: string }>;
  /**
   * What is left for the ACP session settings (session-settings.ts) to select: the preset
   * returns `agent.model` / `agent.effort` here when the agent offers them over ACP, and
   * leaves them out when its launch already applied them.
   */
  sessionModel?: string;
  sessionEffort?: string;
}

/** How `doctor` advises when the tools do not reach the model. */
export interface ToolAdvice {
  /** The agent lists MCP tools behind its own search step. */
  search?: string;
  /** The agent dropped the session's MCP server (the bridge's tools are missing). */
  dropped?: string;
}

export interface Preset {
  name: PresetName;
  /** The agent, as people call it. */
  title: string;
  command: string;
  /** The arguments that make it speak ACP on stdio; `agent.args` replaces these when set. */
  args: string[];
  /** How to install it, one line. */
  install: string;
  /** Prints the version (`<command> <versionArgs>`), when the command has such a flag. */
  versionArgs?: string[];
  /**
   * The environment variables that carry the user's credentials, any one of which is enough.
   * They pass from the daemon's environment to the agent (besides `agent.env`).
   */
  keys: string[];
  /** Files in the agent's HOME that hold a login instead of a key (`<cli> login`), for doctor. */
  loginFiles?: string[];
  /** One line on what the user supplies. */
  needs: string;
  /** The API `agent.provider.base_url` must speak; undefined: the agent talks only to its vendor. */
  wire?: Wire;
  /** `agent.provider.model` is required with a provider (the agent has no default model there). */
  providerNeedsModel?: boolean;
  /** The agent's ACP `session/set_mode` mode the preset selects, unless `agent.mode` is set. */
  mode?: string;
  /** The ACP `authenticate` method, unless `agent.auth_method` is set. */
  authMethod?: (provider: Provider | undefined) => string | undefined;
  /** What the offline suite verifies (README/docs table): "ci" = a real agent in CI. */
  verified: "ci" | "local" | "docs";
  /** Known limits a user should read before picking it. */
  caveats?: string;
  advice: ToolAdvice;
  launch(input: PresetInput): PresetLaunch;
}

/** The ACP session settings a preset leaves to the agent's own options. */
export function viaSession(input: PresetInput): Pick<PresetLaunch, "sessionModel" | "sessionEffort"> {
  return { sessionModel: input.model, sessionEffort: input.effort };
}

/** `base_url` without a trailing slash, so presets can join paths onto it. */
export function trimBase(url: string): string {
  return url.replace(/\/+$/, "");
}
