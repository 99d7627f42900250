/**
 * `doctor`'s agent check: start the agent, complete `initialize`, open one session (with
 * no MCP servers) to see the modes, models and effort levels it offers, and check
 * `agent.mode`, `agent.model` and `agent.effort` against them; then stop it. When none of
 * those is configured, a session that cannot be opened only leaves the lists empty.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type * as acp from "@agentclientprotocol/sdk/unstable";
import { acpSdk } from "./acp-sdk.js";
import { agentEnvironment, secretForms } from "./env.js";
import { AgentModeError, AgentProtocolError, AgentSettingError } from "./errors.js";
import { AgentProcess } from "./process.js";
import { offeredSettings, type OfferedSettings } from "./session-settings.js";
import { presetSpawn, type PresetOptions } from "./preset-spawn.js";

export interface AgentProbe {
  agentInfo?: acp.Implementation;
  capabilities: acp.AgentCapabilities;
  modes: string[];
  /** What the agent offers (empty lists when it offers none, or no session could be opened). */
  offered: OfferedSettings;
  /** Why no session could be opened to list them, when nothing required it. */
  sessionError?: string;
  initMs: number;
}

export async function probeAgent(
  o: PresetOptions & {
    command: string;
    args: string[];
    env: Record<string, string>;
    mode?: string;
    model?: string;
    effort?: string;
    authMethod?: string;
    initTimeoutMs?: number;
    secret?: Uint8Array | string[];
    /** The environment the agent's inherited variables come from; default process.env. */
    parentEnv?: NodeJS.ProcessEnv;
  },
): Promise<AgentProbe> {
  const cwd = mkdtempSync(join(tmpdir(), "buzz-bridge-probe-"));
  // The preset's files go into a directory of the probe's own, removed with it.
  const preset = presetSpawn({ ...o, presetDir: o.presetDir ?? join(cwd, ".preset") }, undefined);
  const started = Date.now();
  const proc = await AgentProcess.start({
    command: o.command,
    args: preset.args,
    cwd,
    env: agentEnvironment({ configured: { ...preset.env, ...o.env }, secret: o.secret, parent: o.parentEnv, inherit: o.preset?.keys }).env,
    initTimeoutMs: o.initTimeoutMs,
    secretForms: secretForms(o.secret),
    authMethod: o.authMethod,
  });
  const initMs = Date.now() - started;
  try {
    let offered: OfferedSettings = { modes: [], models: [], efforts: [], modelVia: "none" };
    let res: acp.NewSessionResponse | undefined;
    let sessionError: string | undefined;
    try {
      res = await proc.agent.request(acpSdk().methods.agent.session.new, { cwd, mcpServers: [] });
    } catch (err) {
      const failure = new AgentProtocolError(proc.displayCommand, "session/new", err);
      if (o.mode || preset.model || preset.effort) throw failure;
      sessionError = failure.message;
    }
    if (res) offered = offeredSettings(res);
    const { modes, models, efforts } = offered;
    if (o.mode && !modes.includes(o.mode)) throw new AgentModeError(proc.displayCommand, o.mode, modes);
    if (preset.model && !models.includes(preset.model))
      throw new AgentSettingError(proc.displayCommand, "agent.model", preset.model, models, "models");
    if (preset.effort && !efforts.includes(preset.effort))
      throw new AgentSettingError(proc.displayCommand, "agent.effort", preset.effort, efforts, "effort levels");
    return { agentInfo: proc.agentInfo, capabilities: proc.capabilities, modes, offered, sessionError, initMs };
  } finally {
    await proc.close(1000);
    rmSync(cwd, { recursive: true, force: true });
  }
}
