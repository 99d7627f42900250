/**
 * What a turn that the model provider failed does next (docs/agents.md "When the provider
 * fails"), by the failure's class (agent/provider-error.ts):
 *   auth        no retry: one notice naming the provider and the key's variable, pointing at `doctor`
 *   limit       the scope is held until the reset the provider gave (the queue's `hold`), one notice;
 *               a limit without a reset time is held for queue.retry_max and tried again
 *   overloaded, network, other: retried as any failed turn
 */
import type { ProviderError } from "../agent/index.js";
import type { Config } from "../config/schema.js";
import { presetFor } from "../presets/index.js";

export type ProviderStep = { kind: "final"; reason: string } | { kind: "hold"; until: number; guessed: boolean } | { kind: "retry" };

export function providerStep(p: ProviderError, cfg: Config, now = Date.now()): ProviderStep {
  if (p.class === "auth") return { kind: "final", reason: authReason(p, cfg) };
  if (p.class === "limit")
    return p.until !== undefined
      ? { kind: "hold", until: p.until, guessed: false }
      : { kind: "hold", until: now + cfg.queue.retry_max, guessed: true };
  return { kind: "retry" };
}

/** The provider as the operator configured it: agent.provider's base URL, else the preset's vendor. */
export function providerName(cfg: Config): string {
  const base = cfg.agent.provider?.base_url;
  if (base) return base;
  const wire = presetFor(cfg.agent.preset)?.wire;
  if (wire === "anthropic") return "Anthropic";
  if (wire === "openai-responses" || wire === "openai-chat") return "OpenAI";
  if (wire === "gemini") return "Google Gemini";
  return "the agent's model provider";
}

/** The variable that carries the agent's key: the preset's first one set, else its first. */
export function keyVariable(cfg: Config, env: NodeJS.ProcessEnv = process.env): string {
  const keys = presetFor(cfg.agent.preset)?.keys ?? [];
  const set = keys.find((k) => (cfg.agent.env?.[k] ?? env[k] ?? "").trim() !== "");
  return set ?? keys[0] ?? "the agent's API key variable (agent.env)";
}

function authReason(p: ProviderError, cfg: Config): string {
  return (
    `the model provider (${providerName(cfg)}) refused the agent's key in ${keyVariable(cfg)} (${p.detail}). ` +
    "Run `buzz-bridge doctor` to check the key, then mention me again"
  );
}

/** The one notice of a hold: when the limit resets (or, with no reset given, when the next try is), in UTC. */
export function holdNotice(until: number, guessed = false, now = Date.now()): string {
  const iso = new Date(until).toISOString();
  const at = `${iso.slice(11, 16)} UTC${iso.slice(0, 10) === new Date(now).toISOString().slice(0, 10) ? "" : ` on ${iso.slice(0, 10)}`}`;
  return guessed
    ? `The provider's limit is reached and it gave no reset time; I'll try again at ${at}.`
    : `The provider's limit resets at ${at}; I'll answer then.`;
}
