/**
 * `agent.model` and `agent.effort`, applied to a freshly opened session the way the agent
 * offers them:
 *
 * - ACP session config options (`configOptions` in the session/new answer): the option of
 *   category `model` (or id `model`) and the one of category `thought_level` (or id
 *   `effort` / `thought_level` / `reasoning_effort`), set with `session/set_config_option`.
 *   Setting the model first, because the answer's options may change with the model.
 * - Otherwise, for the model, the older unstable model selector: `models` in the
 *   session/new answer (`{availableModels: [{modelId}], currentModelId}`) and
 *   `session/set_model` — what claude-code-acp offers. The SDK's schema no longer knows
 *   these, so they are read from the raw answer and sent by method name.
 *
 * A value the agent does not offer is an AgentSettingError naming what it does offer.
 */
import type * as acp from "@agentclientprotocol/sdk/unstable";
import { acpSdk } from "./acp-sdk.js";
import { AgentSettingError } from "./errors.js";
import type { AgentProcess } from "./process.js";

/** The older unstable `models` field of session/new (not in the SDK's schema any more). */
interface LegacyModels {
  availableModels?: Array<{ modelId?: unknown; name?: unknown }>;
  currentModelId?: unknown;
}

/** What a session/new (or resume/load) answer may carry about settings. */
export interface SessionSetup {
  modes?: acp.SessionModeState | null;
  configOptions?: acp.SessionConfigOption[] | null;
  models?: unknown;
}

/** What the agent offers, for `doctor` and for error messages. */
export interface OfferedSettings {
  modes: string[];
  models: string[];
  efforts: string[];
  /** How a model would be selected: a config option, the model selector, or not at all. */
  modelVia: "config_option" | "set_model" | "none";
}

export interface WantedSettings {
  model?: string;
  effort?: string;
}

export interface AppliedSettings {
  model?: string;
  effort?: string;
}

const EFFORT_IDS = new Set(["effort", "thought_level", "reasoning_effort"]);

function modelOption(options: acp.SessionConfigOption[]): acp.SessionConfigOption | undefined {
  return options.find((o) => o.category === "model") ?? options.find((o) => o.id === "model");
}

function effortOption(options: acp.SessionConfigOption[]): acp.SessionConfigOption | undefined {
  return options.find((o) => o.category === "thought_level") ?? options.find((o) => EFFORT_IDS.has(o.id));
}

/** The value ids of a select option (groups flattened); a boolean option offers none. */
function values(option: acp.SessionConfigOption | undefined): string[] {
  if (option?.type !== "select") return [];
  return option.options.flatMap((o) => ("group" in o ? o.options.map((x) => x.value) : [o.value]));
}

function legacyModels(raw: unknown): { ids: string[]; current?: string } | undefined {
  if (!raw || typeof raw !== "object") return undefined;
  const m = raw as LegacyModels;
  if (!Array.isArray(m.availableModels)) return undefined;
  const ids = m.availableModels.map((x) => x?.modelId).filter((x): x is string => typeof x === "string");
  return { ids, current: typeof m.currentModelId === "string" ? m.currentModelId : undefined };
}

export function offeredSettings(setup: SessionSetup): OfferedSettings {
  const options = setup.configOptions ?? [];
  const byOption = modelOption(options);
  const legacy = legacyModels(setup.models);
  return {
    modes: setup.modes?.availableModes.map((m) => m.id) ?? [],
    models: byOption ? values(byOption) : (legacy?.ids ?? []),
    efforts: values(effortOption(options)),
    modelVia: byOption ? "config_option" : legacy ? "set_model" : "none",
  };
}

/**
 * Selects the wanted model and effort on the session; rejects with AgentSettingError
 * when the agent does not offer a value, and passes protocol failures through `guard`.
 */
export async function applySessionSettings(
  proc: AgentProcess,
  sessionId: string,
  setup: SessionSetup,
  want: WantedSettings,
  guard: <T>(step: string, run: () => Promise<T>) => Promise<T>,
): Promise<AppliedSettings> {
  const applied: AppliedSettings = {};
  let options = setup.configOptions ?? [];
  const setOption = async (option: acp.SessionConfigOption, value: string) => {
    if (option.type === "select" && option.currentValue === value) return;
    const res = await guard("session/set_config_option", () =>
      proc.agent.request(acpSdk().methods.agent.session.setConfigOption, { sessionId, configId: option.id, value }),
    );
    // The answer lists every option again; the model may have changed what effort offers.
    if (Array.isArray(res?.configOptions)) options = res.configOptions;
  };

  if (want.model) {
    const option = modelOption(options);
    const legacy = legacyModels(setup.models);
    if (option) {
      const offered = values(option);
      if (!offered.includes(want.model)) throw new AgentSettingError(proc.displayCommand, "agent.model", want.model, offered, "models");
      await setOption(option, want.model);
    } else if (legacy) {
      if (!legacy.ids.includes(want.model))
        throw new AgentSettingError(proc.displayCommand, "agent.model", want.model, legacy.ids, "models");
      if (legacy.current !== want.model) {
        await guard("session/set_model", () => proc.agent.request("session/set_model", { sessionId, modelId: want.model }));
      }
    } else {
      throw new AgentSettingError(proc.displayCommand, "agent.model", want.model, [], "models");
    }
    applied.model = want.model;
  }
  if (want.effort) {
    const option = effortOption(options);
    const offered = values(option);
    if (!option || !offered.includes(want.effort))
      throw new AgentSettingError(proc.displayCommand, "agent.effort", want.effort, offered, "effort levels");
    await setOption(option, want.effort);
    applied.effort = want.effort;
  }
  return applied;
}

/** The model a session runs, when the agent says (config option or model selector). */
export function currentModel(setup: SessionSetup): string | undefined {
  const option = modelOption(setup.configOptions ?? []);
  if (option?.type === "select") return option.currentValue;
  return legacyModels(setup.models)?.current;
}
