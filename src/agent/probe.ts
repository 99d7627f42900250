/**
 * `doctor`'s agent check: start the agent, complete `initialize`, open one session (with
 * no MCP servers) to see its modes, and check `agent.mode` against them; then stop it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk/unstable";
import { agentEnvironment, secretForms } from "./env.js";
import { AgentModeError, AgentProtocolError } from "./errors.js";
import { AgentProcess } from "./process.js";

export interface AgentProbe {
  agentInfo?: acp.Implementation;
  capabilities: acp.AgentCapabilities;
  modes: string[];
  initMs: number;
}

export async function probeAgent(o: {
  command: string; args: string[]; env: Record<string, string>; mode?: string; authMethod?: string; initTimeoutMs?: number; secret?: Uint8Array | string[];
}): Promise<AgentProbe> {
  const cwd = mkdtempSync(join(tmpdir(), "buzz-bridge-probe-"));
  const started = Date.now();
  const proc = await AgentProcess.start({
    command: o.command, args: o.args, cwd, env: agentEnvironment({ configured: o.env, secret: o.secret }).env,
    initTimeoutMs: o.initTimeoutMs, secretForms: secretForms(o.secret), authMethod: o.authMethod,
  });
  const initMs = Date.now() - started;
  try {
    let modes: string[] = [];
    if (o.mode) {
      let res: acp.NewSessionResponse;
      try {
        res = await proc.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
      } catch (err) {
        throw new AgentProtocolError(proc.displayCommand, "session/new", err);
      }
      modes = res.modes?.availableModes.map((m) => m.id) ?? [];
      if (!modes.includes(o.mode)) throw new AgentModeError(proc.displayCommand, o.mode, modes);
    }
    return { agentInfo: proc.agentInfo, capabilities: proc.capabilities, modes, initMs };
  } finally {
    await proc.close(1000);
    rmSync(cwd, { recursive: true, force: true });
  }
}
