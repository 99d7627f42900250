/**
 * Bridge-side stop gates (docs/architecture.md §3).
 *
 * buzz-agent calls `_Stop` itself, but every other ACP agent just ends its turn. Here the
 * bridge asks the session's proxy for the merged `_Stop` when a turn ends:
 * - nobody objects → done;
 * - a `stop: reprompt` server objects → one new prompt carrying the objection, up to
 *   `max_rejections` ROUNDS (a round with three objections costs one);
 * - only `stop: wait` servers object → no model turn at all: the bridge re-asks just
 *   those servers every `wait_poll` until they allow or `wait_max` passes. A human
 *   approval can take an hour; the model's rejection budget would burn in seconds.
 */
import type { Logger } from "../base/log.js";
import { sleep } from "../base/backoff.js";
import type { HookFanout, HookServerResult } from "../contract/hooks.js";
import type { AgentTurnResult, TextBlock, TurnAgent, TurnHooks } from "./ports.js";

export type StopMode = "reprompt" | "wait";

/** Consecutive wait polls that reach none of the pending servers before the wait is given up. */
export const UNREACHABLE_POLLS = 3;

export interface StopGateOptions {
  agent: TurnAgent;
  hooks: TurnHooks;
  /** Server name → how its objections are treated (servers absent here count as reprompt). */
  stopModes: Record<string, StopMode>;
  maxRejections: number;
  waitPollMs: number;
  waitMaxMs: number;
  /** Carries the turn id in its bindings, so `gate.round` names the turn exactly once. */
  logger: Logger;
  signal: AbortSignal;
  /** Called with the gates waited on when the bridge starts waiting for a human (typing stops, ⏳ shows). */
  onWaiting?: (gates: string[]) => void;
  /** Called when a reprompt starts (typing resumes). */
  onReprompt?: () => void;
  /** Injected before the objection text (e.g. _PostCompact after a compaction). */
  prefix?: () => TextBlock[];
}

export type StopGateOutcome =
  | { kind: "allowed"; result: AgentTurnResult; rounds: number }
  | { kind: "budget-exhausted"; result: AgentTurnResult; rounds: number; objectors: string[] }
  | { kind: "wait-timeout"; result: AgentTurnResult; rounds: number; objectors: string[] }
  /** The proxy stopped answering for the gates being waited on (the agent session died). */
  | { kind: "unreachable"; result: AgentTurnResult; rounds: number; objectors: string[] }
  | { kind: "cancelled"; result: AgentTurnResult; rounds: number };

function objectionBlock(fan: HookFanout, objecting: HookServerResult[]): TextBlock {
  const text = objecting.map((s) => `[${s.name}] ${s.text.trim()}`).join("\n\n");
  return {
    type: "text",
    text:
      `Stop gate objection: your turn cannot end yet. The following gate server${objecting.length > 1 ? "s" : ""} ` +
      `objected to ending the turn (merged _Stop, ${fan.ms} ms). Address the objection, then finish.\n\n${text}`,
  };
}

export async function enforceStopGates(first: AgentTurnResult, o: StopGateOptions): Promise<StopGateOutcome> {
  let result = first;
  let rounds = 0;
  let round = 0;
  for (;;) {
    if (o.signal.aborted) return { kind: "cancelled", result, rounds };
    if (result.stopReason !== "end_turn") return { kind: "allowed", result, rounds };
    const fan = await o.hooks.runHook("_Stop");
    round++;
    // A `stop: wait` gate that timed out or failed has not approved anything: for a
    // human approval, fail-open would end the turn unapproved. It joins the wait instead
    // (reprompt gates keep the fail-open rule, which protects the model from a stuck gate).
    const isWait = (name: string) => o.stopModes[name] === "wait";
    const objecting = fan.servers.filter((s) => s.verdict === "object" || (isWait(s.name) && (s.timed_out || !!s.error)));
    logRound(o, round, fan, 0, objecting.length ? "object" : "allow");
    if (objecting.length === 0) return { kind: "allowed", result, rounds };

    const reprompters = objecting.filter((s) => (o.stopModes[s.name] ?? "reprompt") === "reprompt");
    if (reprompters.length > 0) {
      if (rounds >= o.maxRejections) {
        return { kind: "budget-exhausted", result, rounds, objectors: reprompters.map((s) => s.name) };
      }
      rounds++;
      o.onReprompt?.();
      result = await o.agent.prompt([...(o.prefix?.() ?? []), objectionBlock(fan, reprompters)], o.signal);
      continue;
    }

    // Only `stop: wait` servers object: poll them without spending a model turn. A server
    // leaves the wait only by answering "" itself: a poll that timed out, errored or did
    // not reach it (proxy restarting) means "no answer yet", not "approved" — the
    // fail-open rule protects a model from a stuck gate, and here no model is waiting;
    // wait_max bounds a gate that never answers. A proxy that is gone (the agent session
    // died, and the gate's process with it) cannot approve anything: a few polls reaching
    // none of the pending servers end the wait instead of holding the scope for wait_max.
    const pending = new Set(objecting.map((s) => s.name));
    let unreachable = 0;
    o.onWaiting?.([...pending]);
    const started = Date.now();
    for (;;) {
      const remaining = o.waitMaxMs - (Date.now() - started);
      if (remaining <= 0) return { kind: "wait-timeout", result, rounds, objectors: [...pending] };
      await sleep(Math.min(o.waitPollMs, remaining), o.signal);
      if (o.signal.aborted) return { kind: "cancelled", result, rounds };
      const again = await o.hooks.runHook("_Stop", { servers: [...pending] });
      round++;
      unreachable = again.servers.some((s) => pending.has(s.name)) ? 0 : unreachable + 1;
      if (unreachable >= UNREACHABLE_POLLS) {
        logRound(o, round, again, Date.now() - started, "object");
        return { kind: "unreachable", result, rounds, objectors: [...pending] };
      }
      for (const s of again.servers) if (s.verdict === "allow" && !s.timed_out && !s.error) pending.delete(s.name);
      logRound(o, round, again, Date.now() - started, pending.size === 0 ? "allow" : "object");
      if (pending.size === 0) return { kind: "allowed", result, rounds };
    }
  }
}

/** `verdict` is what the bridge made of the round (a timed-out poll while waiting still objects). */
function logRound(o: StopGateOptions, round: number, fan: HookFanout, waitedMs: number, verdict: "allow" | "object" = fan.verdict) {
  o.logger.info(
    {
      evt: "gate.round",
      round,
      verdict,
      waited_ms: waitedMs,
      servers: fan.servers.map((s) => ({ name: s.name, verdict: s.verdict, ms: s.ms, timed_out: s.timed_out, error: s.error })),
    },
    "stop gate round",
  );
}
