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
 *
 * A `stop: wait` gate that is not running when `_Stop` is due counts as its `on_error`
 * (default `object`): one the proxy reports as down, and one missing from the fan-out
 * altogether (the proxy never connected). With `object` it joins the wait like any
 * objection — ⏳ stays, the owner's `!cancel` ends it — and `onGateDown` hears of it once
 * per gate and turn (`gate.down` in the log, one notice in the thread).
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
  /** The session's `stop: wait` servers and what each counts as while it is not running. */
  waitGates?: WaitGate[];
  /** `stop: wait` gates found not running, each reported once per turn. */
  onGateDown?: (gates: Array<{ name: string; reason: string; verdict: "allow" | "object" }>) => void;
}

export interface WaitGate {
  name: string;
  onError: "allow" | "object";
}

/** A session's `stop: wait` servers, from its manifest's servers. */
export function waitGatesOf(servers: Array<{ name: string; stop: StopMode; on_error: "allow" | "object" }>): WaitGate[] {
  return servers.filter((s) => s.stop === "wait").map((s) => ({ name: s.name, onError: s.on_error }));
}

export type StopGateOutcome =
  /** `unasked`: the turn stopped for another reason than end_turn, so no gate was asked. */
  | { kind: "allowed"; result: AgentTurnResult; rounds: number; unasked?: boolean }
  /** `waiting`: the `stop: wait` gates that objected in the last round too (they never allowed). */
  | { kind: "budget-exhausted"; result: AgentTurnResult; rounds: number; objectors: string[]; waiting: string[] }
  | { kind: "wait-timeout"; result: AgentTurnResult; rounds: number; objectors: string[] }
  /** The proxy stopped answering for the gates being waited on (the agent session died). */
  | { kind: "unreachable"; result: AgentTurnResult; rounds: number; objectors: string[] }
  /** `objectors`: the `stop: wait` gates still withholding approval when it was cancelled during a wait. */
  | { kind: "cancelled"; result: AgentTurnResult; rounds: number; objectors?: string[] };

function objectionBlock(fan: HookFanout, objecting: HookServerResult[]): TextBlock {
  const text = objecting.map((s) => `[${s.name}] ${s.text.trim()}`).join("\n\n");
  return {
    type: "text",
    text:
      `Stop gate objection: your turn cannot end yet. The following gate server${objecting.length > 1 ? "s" : ""} ` +
      `objected to ending the turn (merged _Stop, ${fan.ms} ms). Address the objection, then finish.\n\n${text}`,
  };
}

/**
 * The fan-out with every `stop: wait` gate the proxy did not report added as down (the
 * proxy is not connected, or the link failed): a gate nobody could ask approved nothing.
 */
function withAbsentGates(fan: HookFanout, gates: WaitGate[], only?: Set<string>): HookFanout {
  const absent = gates.filter((g) => (!only || only.has(g.name)) && !fan.servers.some((s) => s.name === g.name));
  if (absent.length === 0) return fan;
  const error = "not running: the session's MCP proxy did not report it";
  const added: HookServerResult[] = absent.map((g) => ({
    name: g.name,
    ms: 0,
    verdict: g.onError,
    timed_out: false,
    error,
    down: true,
    // A wait gate's text never reaches the agent: it is waited on, not re-prompted.
    text: "",
  }));
  const servers = [...fan.servers, ...added];
  return { ...fan, servers, verdict: servers.some((s) => s.verdict === "object") ? "object" : fan.verdict };
}

export async function enforceStopGates(first: AgentTurnResult, o: StopGateOptions): Promise<StopGateOutcome> {
  let result = first;
  let rounds = 0;
  let round = 0;
  const reportedDown = new Set<string>();
  const reportDown = (fan: HookFanout) => {
    const fresh = fan.servers.filter((s) => s.down && !reportedDown.has(s.name));
    if (fresh.length === 0) return;
    for (const s of fresh) {
      reportedDown.add(s.name);
      o.logger.warn(
        { evt: "gate.down", gate: s.name, reason: s.error, verdict: s.verdict },
        s.verdict === "object"
          ? `stop gate '${s.name}' is not running; it counts as an objection (on_error: object) and the turn waits`
          : `stop gate '${s.name}' is not running; it counts as no objection (on_error: allow)`,
      );
    }
    o.onGateDown?.(fresh.map((s) => ({ name: s.name, reason: s.error ?? "not running", verdict: s.verdict })));
  };
  for (;;) {
    if (o.signal.aborted) return { kind: "cancelled", result, rounds };
    if (result.stopReason !== "end_turn") return { kind: "allowed", result, rounds, unasked: true };
    const fan = withAbsentGates(await o.hooks.runHook("_Stop"), o.waitGates ?? []);
    round++;
    reportDown(fan);
    // Each server counts as its verdict: its answer, or its on_error when it timed out,
    // failed or is not running. A `stop: wait` gate defaults to on_error: object, so a
    // human approval that is down or slow joins the wait instead of approving; reprompt
    // gates default to allow, which protects the model from a stuck gate.
    const objecting = fan.servers.filter((s) => s.verdict === "object");
    logRound(o, round, fan, 0, objecting.length ? "object" : "allow");
    if (objecting.length === 0) return { kind: "allowed", result, rounds };

    const reprompters = objecting.filter((s) => (o.stopModes[s.name] ?? "reprompt") === "reprompt");
    if (reprompters.length > 0) {
      if (rounds >= o.maxRejections) {
        const waiting = objecting.filter((s) => o.stopModes[s.name] === "wait").map((s) => s.name);
        return { kind: "budget-exhausted", result, rounds, objectors: reprompters.map((s) => s.name), waiting };
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
      if (o.signal.aborted) return { kind: "cancelled", result, rounds, objectors: [...pending] };
      const asked = await o.hooks.runHook("_Stop", { servers: [...pending] });
      round++;
      unreachable = asked.servers.some((s) => pending.has(s.name)) ? 0 : unreachable + 1;
      const again = withAbsentGates(asked, o.waitGates ?? [], pending);
      if (unreachable >= UNREACHABLE_POLLS) {
        logRound(o, round, again, Date.now() - started, "object");
        return { kind: "unreachable", result, rounds, objectors: [...pending] };
      }
      reportDown(again);
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
      servers: fan.servers.map((s) => ({
        name: s.name,
        verdict: s.verdict,
        ms: s.ms,
        timed_out: s.timed_out,
        error: s.error,
        ...(s.down ? { down: true } : {}),
      })),
    },
    "stop gate round",
  );
}
