/**
 * One turn's life in the channel: signals, the agent's prompt, bridge-side stop gates,
 * `_PostCompact` re-injection, the reply fallback and the outcome the queue records.
 *
 * The bridge knows exactly what the agent published because every post goes through the
 * daemon (the proxy's `send_message` over the link): `published` is filled by the daemon
 * while the turn runs, so a fallback can never double a tool reply.
 */
import type { Event } from "nostr-tools";
import { AgentProtocolError, type ProviderError } from "../agent/index.js";
import type { Logger } from "../base/log.js";
import { message, messageParts, PROGRESS_TAG, type ThreadRef } from "../nostr/events.js";
import { MENTION_CAP } from "../contract/limits.js";
import type { AgentTurnResult, PromptBlock, TextBlock, TurnAgent, TurnHooks, TurnPublisher } from "./ports.js";
import { TurnSignals } from "./signals.js";
import { enforceStopGates, type StopMode, type WaitGate } from "./stop-gates.js";
import type { HeldPosts } from "./held-posts.js";

import type { Enforce } from "../config/enforce.js";
import type { ReplyFallbackMode } from "../config/schema.js";
import { formatSize } from "../config/size.js";
import { utf8Prefix } from "../base/utf8.js";

export interface TurnSpec {
  turnId: string;
  channel: string;
  thread: ThreadRef;
  triggers: Event[];
  blocks: PromptBlock[];
  replyFallback: ReplyFallbackMode;
  /** `replies.max_bytes`: a final-text fallback longer than this is cut to it, saying so. */
  maxReplyBytes: number;
  typing: boolean;
  /** The relay's content limit (its NIP-11); a longer fallback reply goes out in parts. */
  contentLimit?: number;
  enforce: Enforce;
  gates: {
    maxRejections: number;
    waitPollMs: number;
    waitMaxMs: number;
    stopModes: Record<string, StopMode>;
    /** The session's `stop: wait` servers: one that is not running when `_Stop` is due counts as its on_error. */
    waitGates?: WaitGate[];
  };
  /** Of these triggers, those never given 👀 before (claimed now); absent: all of them. */
  firstSeen?(ids: string[]): Promise<string[]>;
}

export interface TurnPorts {
  agent: TurnAgent;
  hooks: TurnHooks | undefined;
  out: TurnPublisher;
  /** Bound to the turn (`turn` in its bindings): every line of the turn names it once. */
  logger: Logger;
  /** Ids the agent published during this turn (filled by the daemon's link handlers). */
  published: Set<string>;
  /** Resolves when no tool publish of this turn is still on its way. */
  settled?: () => Promise<void>;
  signal: AbortSignal;
  /** The turn waits on these `stop: wait` gates (⏳), or no longer waits (undefined); for the status page. */
  onGateWait?(gates: string[] | undefined): void;
  /** Text to put at the start of the next prompt (a `_PostCompact` answer). */
  pendingInjection?: { take(): string | undefined; set(text: string): void };
  /** A `stop: wait` gate was found not running (once per gate and turn), for metrics. */
  onGateDown?(gate: string): void;
  /** The turn's send_message posts held for a `hold_replies` gate: posted once it allows the turn to end. */
  held?: Pick<HeldPosts, "gates" | "size" | "flush" | "drop">;
}

export type TurnOutcome =
  | { status: "answered"; published: string[]; via: "tool" | "fallback" | "notice" | "silent" }
  | { status: "failed"; reason: string; published: string[]; provider?: ProviderError }
  | { status: "cancelled"; published: string[] };

class TurnFailed extends Error {
  override name = "TurnFailed";
}

export async function runTurn(spec: TurnSpec, ports: TurnPorts): Promise<TurnOutcome> {
  const signals = new TurnSignals(ports.out, {
    channel: spec.channel,
    thread: spec.thread,
    triggers: spec.triggers,
    typing: spec.typing,
    firstSeen: spec.firstSeen,
  });
  // ports.logger already carries the turn id (the dispatcher's child logger); binding it
  // again would write a second "turn" key into every JSON line.
  const log = ports.logger.child({ channel: spec.channel });
  signals.started();
  const injected = (): TextBlock[] => {
    const text = ports.pendingInjection?.take();
    return text ? [{ type: "text", text: `Context restored after compaction (merged _PostCompact):\n\n${text}` }] : [];
  };
  const published = () => [...ports.published];
  let gaveUpOnGate = false;
  // Held posts that will not go out: logged, and the sentence the turn's one notice adds ("" when none).
  const dropHeld = (reason: string): string => {
    const n = ports.held?.drop() ?? 0;
    if (n === 0) return "";
    log.info({ evt: "gate.hold_dropped", count: n, gates: ports.held!.gates, reason }, "held posts dropped: the gate never approved them");
    return ` The ${n === 1 ? "message" : `${n} messages`} the agent wrote in this turn, held for the approval of gate ${names(ports.held!.gates)}, ${n === 1 ? "was" : "were"} not posted.`;
  };
  try {
    let result = await ports.agent.prompt([...injected(), ...spec.blocks], ports.signal);
    await afterCompaction(result, ports, log);
    if (ports.signal.aborted || result.stopReason === "cancelled") {
      if (result.timedOut) throw new TurnFailed(timeoutReason(result.timedOut));
      const dropped = dropHeld(String(ports.signal.reason ?? "cancelled"));
      if (dropped && ports.signal.reason !== "shutdown") await notice(ports, spec, `Cancelled.${dropped}`).catch(() => {});
      cancelledSignal(signals, ports.signal);
      return { status: "cancelled", published: published() };
    }
    if (result.stopReason === "refusal") throw new TurnFailed("the agent refused to answer");

    if (spec.enforce === "bridge" && ports.hooks) {
      let downNoticed = false;
      const gate = await enforceStopGates(result, {
        agent: {
          prompt: async (b, s) => {
            const r = await ports.agent.prompt(b, s);
            await afterCompaction(r, ports, log);
            return r;
          },
        },
        hooks: ports.hooks,
        stopModes: spec.gates.stopModes,
        maxRejections: spec.gates.maxRejections,
        waitPollMs: spec.gates.waitPollMs,
        waitMaxMs: spec.gates.waitMaxMs,
        logger: log,
        signal: ports.signal,
        onWaiting: (gates) => {
          signals.waiting();
          ports.onGateWait?.(gates);
        },
        onReprompt: () => signals.startTyping(),
        prefix: injected,
        waitGates: spec.gates.waitGates,
        onGateDown: (gates) => {
          for (const g of gates) ports.onGateDown?.(g.name);
          const closed = gates.filter((g) => g.verdict === "object");
          if (closed.length === 0 || downNoticed) return;
          // One notice per turn, marked as a progress note: the turn goes on (⏳), and the
          // notice is not its answer.
          downNoticed = true;
          void progressNotice(
            ports,
            spec,
            `This turn waits for the approval of gate ${names(closed.map((g) => g.name))}, which is not running (${closed[0]!.reason}). ` +
              "Nothing is approved while it is down: the turn stays open until the gate is back and approves, or the owner ends it with !cancel.",
          );
        },
      });
      result = gate.result;
      ports.onGateWait?.(undefined);
      if (gate.kind === "cancelled") {
        // A gate that never allowed never ends ✅: the owner's stop while waiting says so once.
        const dropped = dropHeld(String(ports.signal.reason ?? "cancelled"));
        if (ports.signal.reason !== "shutdown" && (gate.objectors?.length || dropped))
          await notice(
            ports,
            spec,
            gate.objectors?.length
              ? `Cancelled while waiting for gate ${names(gate.objectors)}: it never allowed this turn to end, so its answer is not approved.${dropped}`
              : `Cancelled.${dropped}`,
          ).catch(() => {});
        cancelledSignal(signals, ports.signal);
        return { status: "cancelled", published: published() };
      }
      if (gate.kind === "budget-exhausted") {
        // A hold gate that objected in the last round never approved the held posts.
        const holding = gate.waiting.some((g) => ports.held?.gates.includes(g));
        const dropped = holding ? dropHeld("budget-exhausted") : "";
        await notice(
          ports,
          spec,
          `The turn ended although gate ${names(gate.objectors)} still objects (${gate.rounds} re-prompt${gate.rounds === 1 ? "" : "s"} used, the limit).${dropped}`,
        );
      } else if (gate.kind === "wait-timeout") {
        gaveUpOnGate = true;
        await notice(
          ports,
          spec,
          `Gave up waiting for gate ${names(gate.objectors)} to allow the turn to end (waited the configured maximum).${dropHeld("wait-timeout")}`,
        );
      } else if (gate.kind === "unreachable") {
        gaveUpOnGate = true;
        await notice(
          ports,
          spec,
          `Stopped waiting for gate ${names(gate.objectors)}: it can no longer be reached (the agent session ended).${dropHeld("unreachable")}`,
        );
      } else if (gate.unasked && ports.held?.size) {
        // The turn stopped for another reason than end_turn (a spent budget): no gate was asked, none approved.
        await notice(ports, spec, `The turn ended (${result.stopReason}) before its gates were asked.${dropHeld(result.stopReason)}`);
      }
    }
    if (result.timedOut) throw new TurnFailed(timeoutReason(result.timedOut));
    if (ports.held?.size) await flushHeld(ports.held, log);

    const via = await replyIfSilent(result, spec, ports);
    // A `stop: wait` gate that never allowed (wait_max, or it could no longer be reached): ⚠️, never ✅.
    signals.finished(!gaveUpOnGate);
    return { status: "answered", published: published(), via };
  } catch (err) {
    // The failure notice (or the cancellation) is the turn's one word; the held posts are only logged.
    dropHeld(ports.signal.aborted ? String(ports.signal.reason ?? "cancelled") : "failed");
    if (ports.signal.aborted) {
      cancelledSignal(signals, ports.signal);
      return { status: "cancelled", published: published() };
    }
    // ⚠️ only once the failure is final: the dispatcher marks it with the notice, so a turn
    // that is retried and then answered ends with ✅ alone.
    signals.stopTyping();
    const reason = err instanceof Error ? err.message : String(err);
    log.warn({ evt: "turn.error", err: reason }, "turn failed");
    const provider = err instanceof AgentProtocolError ? err.provider : undefined;
    return { status: "failed", reason, published: published(), ...(provider ? { provider } : {}) };
  }
}

/** The held posts, now that their gate approved: in order, each once the one before it is in. */
async function flushHeld(held: NonNullable<TurnPorts["held"]>, log: Logger): Promise<void> {
  const n = held.size;
  try {
    await held.flush();
  } catch (err) {
    throw new TurnFailed(`a message held for gate approval could not be posted: ${err instanceof Error ? err.message : String(err)}`);
  }
  log.info({ evt: "gate.hold_released", count: n, gates: held.gates }, "held posts published after the gate approved");
}

async function afterCompaction(result: AgentTurnResult, ports: TurnPorts, log: Logger): Promise<void> {
  if (!result.compacted || !ports.hooks || !ports.pendingInjection) return;
  const fan = await ports.hooks.runHook("_PostCompact");
  log.info({ evt: "turn.post_compact", verdict: fan.verdict, bytes: fan.text.length }, "compaction reported");
  if (fan.text) ports.pendingInjection.set(fan.text);
}

/** The fallback of docs/architecture.md §3: only when the agent published nothing during the turn. */
async function replyIfSilent(
  result: AgentTurnResult,
  spec: TurnSpec,
  ports: TurnPorts,
): Promise<"tool" | "fallback" | "notice" | "silent"> {
  // An agent may stop waiting for a send_message whose publish is still retrying through
  // a reconnect; decide on a fallback only once that publish has landed or failed.
  await ports.settled?.();
  if (ports.published.size > 0) return "tool";
  const text = result.finalText.trim();
  if (spec.replyFallback === "final_text" && text) {
    // Longer than the relay takes: ordered, marked parts in the same thread, each published
    // once the one before it is in. Longer than an agent may post: cut, and said so.
    const reply = cutReply(text, spec.maxReplyBytes);
    for (const part of messageParts(spec.channel, reply, { thread: spec.thread, mentions: requesters(spec) }, spec.contentLimit)) {
      const ev = await ports.out.publish(part);
      if (!ev) throw new TurnFailed("the relay refused the fallback reply");
      ports.published.add(ev.id);
    }
    return "fallback";
  }
  if (spec.replyFallback === "notice" || (spec.replyFallback === "final_text" && !text)) {
    await notice(ports, spec, "The agent finished this turn without replying.");
    return "notice";
  }
  return "silent";
}

/** `text` within `max` UTF-8 bytes: as it is, or its start (whole characters) and a note saying what was cut. */
export function cutReply(text: string, max: number): string {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes <= max) return text;
  const note = `\n\n[… cut by the bridge: the agent's reply was ${bytes} bytes, more than one message may carry (replies.max_bytes, ${formatSize(max)})]`;
  return utf8Prefix(text, max - Buffer.byteLength(note, "utf8")) + note;
}

/** A note in the thread while the turn goes on; not an answer (docs/protocol.md §4), so not in `published`. */
async function progressNotice(ports: TurnPorts, spec: TurnSpec, text: string): Promise<void> {
  await ports.out.publish(message(spec.channel, text, { thread: spec.thread, mentions: requesters(spec), extraTags: [[...PROGRESS_TAG]] }));
}

async function notice(ports: TurnPorts, spec: TurnSpec, text: string): Promise<void> {
  const ev = await ports.out.publish(message(spec.channel, text, { thread: spec.thread, mentions: requesters(spec) }));
  if (ev) ports.published.add(ev.id);
}

/** The people who asked, for a notice's mentions (at most MENTION_CAP, the Buzz cap). */
export function requesters(spec: Pick<TurnSpec, "triggers">): string[] {
  return [...new Set(spec.triggers.map((e) => e.pubkey))].slice(0, MENTION_CAP);
}

/** The one message posted when a turn fails for good. */
/**
 * A cancelled turn: ⚠️ when the owner cancelled it; nothing when the daemon is shutting
 * down, since the turn runs again after the restart and its ✅ should then stand alone.
 */
function cancelledSignal(signals: TurnSignals, signal: AbortSignal): void {
  if (signal.aborted && signal.reason === "shutdown") signals.stopTyping();
  else signals.finished(false);
}

export function failureNotice(channel: string, thread: ThreadRef, triggers: Event[], reason: string) {
  return message(channel, `Sorry, I could not answer this: ${reason}.`, {
    thread,
    mentions: requesters({ triggers }),
    extraTags: [["buzz", "agent-failure"]],
  });
}

function timeoutReason(kind: "idle" | "max_turn"): string {
  return kind === "idle" ? "the agent produced no output for too long (idle timeout)" : "the turn ran past its time limit (max_turn)";
}

function names(list: string[]): string {
  return list.map((n) => `'${n}'`).join(", ");
}
