/**
 * The agent's environment (docs/architecture.md §3): nothing is inherited except an allow-list of
 * plain OS settings, then `agent.env` is laid over it. The bridge's secret key never
 * gets in: the well-known variable names are dropped, and so is any variable whose
 * value contains the key in either spelling (nsec or hex), even when a user put it in
 * `agent.env` by mistake.
 */
import * as nip19 from "nostr-tools/nip19";
import { bytesToHex } from "nostr-tools/utils";
import { PROXY_SERVER_NAME } from "../contract/proxy-entry.js";
import { AGENT_INHERITED_ENV, AGENT_INHERITED_PREFIXES, SECRET_ENV_NAMES } from "../contract/env.js";

export interface AgentEnvOptions {
  /** `agent.env` from config: added after the allow-list, so it may override PATH etc. */
  configured?: Record<string, string>;
  /** The bridge's secret key (bytes) or its textual forms; any value containing one is dropped. */
  secret?: Uint8Array | string[];
  /** `gates.enforce` resolved to `agent`: tells the agent which MCP entry has hooks (docs/architecture.md §3). */
  hooksAgentEnforced?: boolean;
  /** Defaults to `process.env`; tests pass their own. */
  parent?: NodeJS.ProcessEnv;
  /** Further names taken from the parent: a preset's key variables (docs/agents.md). */
  inherit?: readonly string[];
}

export interface AgentEnv {
  env: Record<string, string>;
  /** Names that were refused because they held (or were named like) the secret key; for a warn log. */
  dropped: string[];
}

/** The spellings of a secret key that must not appear in any child environment or log. */
export function secretForms(secret: Uint8Array | string[] | undefined): string[] {
  if (!secret) return [];
  if (Array.isArray(secret)) return secret.filter((s) => s.length >= 16);
  const hex = bytesToHex(secret);
  return [hex, nip19.nsecEncode(secret)];
}

function containsSecret(value: string, forms: string[]): boolean {
  const lower = value.toLowerCase();
  return forms.some((f) => lower.includes(f.toLowerCase()));
}

export function agentEnvironment(opts: AgentEnvOptions = {}): AgentEnv {
  const parent = opts.parent ?? process.env;
  const forms = secretForms(opts.secret);
  const env: Record<string, string> = {};
  const dropped: string[] = [];
  const put = (name: string, value: string) => {
    if (SECRET_ENV_NAMES.includes(name) || containsSecret(value, forms)) {
      dropped.push(name);
      return;
    }
    env[name] = value;
  };
  for (const [name, value] of Object.entries(parent)) {
    if (value === undefined) continue;
    if (AGENT_INHERITED_ENV.has(name) || AGENT_INHERITED_PREFIXES.some((p) => name.startsWith(p)) || opts.inherit?.includes(name))
      put(name, value);
  }
  // buzz-agent's reply guard would nag about send_message posts; the bridge's fallback covers silence.
  env.BUZZ_AGENT_REQUIRE_REPLY = "0";
  if (opts.hooksAgentEnforced) env.MCP_HOOK_SERVERS = PROXY_SERVER_NAME;
  for (const [name, value] of Object.entries(opts.configured ?? {})) put(name, value);
  return { env, dropped: [...new Set(dropped)] };
}

/** Replaces every spelling of the secret in text (stderr lines, error tails) with a marker. */
export function scrubSecret(text: string, forms: string[]): string {
  let out = text;
  for (const f of forms) out = out.split(f).join("[redacted]");
  return out;
}
