/**
 * Native steering: the `_session/steering` ACP extension method that claude-agent-acp and
 * codex-acp implement. It puts a message into the session's RUNNING turn instead of
 * starting a new one. An agent advertises it in its `initialize` answer with
 * `_meta.steering.supported: true` (top level; `agentCapabilities._meta` is accepted too).
 *
 * The request is `{ sessionId, prompt: ContentBlock[] }`; we always add the opt-in
 * `_meta.steering.idleBehavior: "promptRequired"`, so a steer that races the end of the turn
 * is answered "promptRequired" (no turn is running) instead of starting a turn nobody owns.
 *
 * Answers, as a union:
 * - `injected`: the message is in the running turn.
 * - `no-turn`: the turn had already ended ("promptRequired"); deliver it as a new prompt.
 * - `refused`: the agent does not steer after all (method not found, "failed", an error):
 *   fall back to cancel-and-merge.
 * - `ambiguous`: "startedNewTurn" although we opted out of that, or an answer we cannot
 *   read: the agent may or may not have it; treated like `refused` after a cancel, so the
 *   message is delivered once, by us.
 */
import type * as acp from "@agentclientprotocol/sdk/unstable";

export const STEER_METHOD = "_session/steering";

export type SteerAnswer =
  | { kind: "injected" }
  | { kind: "no-turn"; reason: string }
  | { kind: "refused"; reason: string }
  | { kind: "ambiguous"; reason: string };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** True when the agent's `initialize` answer advertises `_meta.steering.supported`. */
export function steeringAdvertised(init: { _meta?: unknown; agentCapabilities?: { _meta?: unknown } | null }): boolean {
  const supported = (meta: unknown) => isObject(meta) && isObject(meta.steering) && meta.steering.supported === true;
  return supported(init._meta) || supported(init.agentCapabilities?._meta);
}

export function steerRequest(sessionId: string, prompt: acp.ContentBlock[]): Record<string, unknown> {
  return { sessionId, prompt, _meta: { steering: { idleBehavior: "promptRequired" } } };
}

/** Reads the agent's answer (or the error it threw) into a SteerAnswer. */
export function readSteerAnswer(result: { ok: true; value: unknown } | { ok: false; error: unknown }): SteerAnswer {
  if (!result.ok) {
    const e = result.error as { code?: number; message?: string } | undefined;
    const reason =
      e?.code === -32601 ? "method not found" : `error${e?.code !== undefined ? ` ${e.code}` : ""}: ${e?.message ?? String(result.error)}`;
    return { kind: "refused", reason };
  }
  const v = result.value;
  const outcome = isObject(v) ? v.outcome : undefined;
  switch (outcome) {
    case "injected":
      return { kind: "injected" };
    case "promptRequired":
      return { kind: "no-turn", reason: isObject(v) && typeof v.reason === "string" ? v.reason : "noRunningTurn" };
    case "failed":
      return { kind: "refused", reason: "the agent answered failed" };
    case "startedNewTurn":
      return { kind: "ambiguous", reason: "the agent started a new turn although promptRequired was asked for" };
    default:
      return { kind: "ambiguous", reason: `unreadable answer ${JSON.stringify(v)?.slice(0, 120)}` };
  }
}
