/**
 * Messages that arrive while a turn runs (`mid_turn: steer | interrupt | owner-interrupt`):
 * the running turn's inbox. The queue has already made each one a durable trigger of the
 * turn (joinRunning) before it gets here; this decides how the agent gets it:
 *
 * - native steer: `_session/steering` into the running prompt, when the agent offers it;
 * - cancel-and-merge: `session/cancel`, then the same session is prompted again with the
 *   new messages framed "arrived while you were working" (steer) or "supersede the earlier
 *   request" (interrupt) — what the cancelled part published stays published and counts.
 *
 * Whatever happens, each message ends exactly once: given to the agent in this turn, or
 * handed back (`leave`) to wait for the scope's next turn when this one cannot take it
 * (it ended on its own before the cancel took effect, the agent answered that no turn was
 * running, the merge budget is spent). A turn that is not prompting the agent (opening
 * its session, evaluating or waiting on stop gates, publishing the fallback) takes nothing:
 * the message waits for the next turn. That is the documented rule for `stop: wait` too —
 * a turn waiting for a human's approval is not restarted by chat.
 */
import type { Event } from "nostr-tools";
import type { SteerAnswer } from "../agent/steering.js";
import type { MidTurnMode } from "../config/schema.js";
import type { MidTurnFraming } from "../prompt/index.js";
import type { Logger } from "../base/log.js";
import type { AgentTurnResult, PromptBlock } from "./ports.js";

/** How one message should enter the turn: `steer` (add) or `interrupt` (supersede). */
export type MidTurnHow = "steer" | "interrupt";
export type SteerMethod = "native" | "cancel-merge";

/** Cancel-and-merge rounds per turn; beyond it new messages wait for the next turn (a storm cannot cancel forever). */
const MAX_MERGES_PER_TURN = 10;

export interface MidTurnSession {
  readonly steerable: boolean;
  /** Updates the agent sent in the running prompt so far (to tell whether a steer was acted on). */
  readonly updatesSoFar: number;
  steer(blocks: PromptBlock[]): Promise<SteerAnswer>;
  interruptForSteer(): boolean;
  /** `session/cancel` although no turn of ours runs: stops a turn the agent started on its own. */
  cancelStray(): void;
}

export interface MidTurnDeps {
  session: MidTurnSession;
  /** Frames the messages for the agent (prompt/turn.ts midTurn). */
  blocks(events: Event[], framing: MidTurnFraming): Promise<PromptBlock[]>;
  /** Hands undelivered messages back to the queue for the scope's next turn. */
  leave(eventIds: string[]): void;
  /** The agent got these messages (👀, reply anchor, metrics). */
  delivered(events: Event[], method: SteerMethod, waitedMs: number[]): void;
  logger: Logger;
}

interface Pending {
  ev: Event;
  how: MidTurnHow;
  /** When the daemon accepted it (ms), for the delivery-latency metric. */
  at: number;
}

/** How a message arriving mid-turn enters the turn under the channel's `mid_turn`; undefined = it queues. */
export function midTurnHow(mode: MidTurnMode, fromOwner: boolean): MidTurnHow | undefined {
  switch (mode) {
    case "steer":
      return "steer";
    case "interrupt":
      return "interrupt";
    case "owner-interrupt":
      return fromOwner ? "interrupt" : undefined;
    case "queue":
      return undefined;
  }
}

export class MidTurnInbox {
  private phase: "starting" | "prompting" | "between" | "ended" = "starting";
  private queue: Pending[] = [];
  private inFlight: Promise<void> = Promise.resolve();
  /** A cancel for a merge was sent for the current prompt, and how the merged messages are framed. */
  private merge: MidTurnHow | undefined;
  private merges = 0;
  private nativeOff = false;
  /** Natively injected in the current prompt, with the update count at injection. */
  private injected: { events: Pending[]; updatesAt: number } | undefined;

  constructor(private readonly d: MidTurnDeps) {}

  /** False when the turn cannot take a message now (see the module comment): queue it instead. */
  canTake(): boolean {
    if (this.phase === "ended" || this.phase === "between") return false;
    return this.merges < MAX_MERGES_PER_TURN;
  }

  /** A message that joined the turn durably; delivered now or with the next prompt. */
  take(ev: Event, how: MidTurnHow, acceptedAt: number): void {
    this.queue.push({ ev, how, at: acceptedAt });
    if (this.phase === "prompting") this.deliver();
  }

  /**
   * Wraps one prompt of the turn (the first, or a stop-gate re-prompt): messages taken
   * before it started go into it; a merge cancel is followed by a re-prompt with the merged
   * messages, until the agent ends a prompt on its own.
   */
  async prompt(
    blocks: PromptBlock[],
    run: (blocks: PromptBlock[]) => Promise<AgentTurnResult & { updates?: number }>,
    aborted: () => boolean,
  ): Promise<AgentTurnResult> {
    let next = blocks;
    if (this.phase === "starting" && this.queue.length) {
      const early = this.queue.splice(0);
      next = [
        ...blocks,
        ...(await this.d.blocks(
          early.map((p) => p.ev),
          "early",
        )),
      ];
      this.log(early, "cancel-merge", "early");
      this.d.delivered(
        early.map((p) => p.ev),
        "cancel-merge",
        early.map((p) => Date.now() - p.at),
      );
    }
    for (;;) {
      this.phase = "prompting";
      this.merge = undefined;
      this.injected = undefined;
      // run() opens the prompt synchronously, so a cancel or steer sent now reaches it.
      const running = run(next);
      if (this.queue.length) this.deliver();
      const result = await running;
      this.phase = "between";
      await this.inFlight;
      if (aborted()) return result;
      // Read back through a method: TypeScript cannot see the steer answers that set these meanwhile.
      const { merge, injected } = this.state();
      let items: Pending[] = [];
      if (merge && result.stopReason === "cancelled") {
        items = this.queue.splice(0);
      } else if (injected && result.updates !== undefined && result.updates <= injected.updatesAt && result.stopReason !== "cancelled") {
        // The prompt ended right after the injection without a word more: the agent may never
        // have read it (claude-agent-acp can end the owning prompt while a steer is queued).
        this.d.logger.warn(
          { evt: "turn.steer_unacted", events: injected.events.map((p) => p.ev.id) },
          "the turn ended right after a native steer; prompting again with it",
        );
        items = injected.events;
        this.nativeOff = true;
      }
      if (!items.length) {
        if (result.stopReason === "cancelled" && !result.timedOut) {
          // Nobody who may end a turn asked for this cancel (the owner and shutdown abort the
          // turn; our merge cancels always have something to merge): ended as "cancelled"
          // the mentions would be closed without an answer. Fail instead: retried, or a notice.
          this.d.logger.warn(
            { evt: "turn.agent_cancelled", merge: merge ?? null },
            "the prompt ended cancelled although nobody cancelled the turn",
          );
          throw new Error("the agent ended the turn as cancelled without being asked to");
        }
        // The turn ended on its own before a cancel took effect: what it published is its
        // answer, and whatever is still here starts the next turn.
        return result;
      }
      this.merges++;
      const framing = items.some((p) => p.how === "interrupt") ? "interrupt" : "steer";
      next = await this.d.blocks(
        items.map((p) => p.ev),
        framing,
      );
      if (framing === "interrupt")
        this.d.logger.info(
          { evt: "turn.superseded", events: items.map((p) => p.ev.id), merges: this.merges },
          "turn cancelled; the new messages supersede the request",
        );
      else this.log(items, "cancel-merge");
      this.d.delivered(
        items.map((p) => p.ev),
        "cancel-merge",
        items.map((p) => Date.now() - p.at),
      );
    }
  }

  /**
   * The turn is over: waits for a steer still being answered, then hands what was never
   * delivered back to the queue (unless the owner cancelled the turn, which ended them).
   */
  async close(handBack: boolean): Promise<void> {
    this.phase = "ended";
    await this.inFlight;
    const left = this.queue.splice(0);
    if (left.length && handBack) {
      this.d.logger.info(
        { evt: "turn.mid_turn_requeued", events: left.map((p) => p.ev.id) },
        "messages that arrived as the turn ended wait for the next turn",
      );
      this.d.leave(left.map((p) => p.ev.id));
    }
  }

  private state(): { merge: MidTurnHow | undefined; injected: { events: Pending[]; updatesAt: number } | undefined } {
    return { merge: this.merge, injected: this.injected };
  }

  private deliver(): void {
    const interrupt = this.queue.some((p) => p.how === "interrupt");
    if (interrupt || this.nativeOff || !this.d.session.steerable || this.merge) {
      this.requestMerge(interrupt ? "interrupt" : "steer");
      return;
    }
    const items = this.queue.splice(0);
    this.inFlight = this.inFlight.then(() => this.steerNatively(items));
  }

  private requestMerge(how: MidTurnHow): void {
    if (this.merge === "interrupt" || this.merge === how) return;
    const first = this.merge === undefined;
    this.merge = how;
    if (first && !this.d.session.interruptForSteer()) this.merge = undefined;
  }

  private async steerNatively(items: Pending[]): Promise<void> {
    if (this.phase !== "prompting") {
      this.queue.unshift(...items);
      return;
    }
    let answer: SteerAnswer;
    let updatesAt = 0;
    try {
      const blocks = await this.d.blocks(
        items.map((p) => p.ev),
        "steer",
      );
      updatesAt = this.d.session.updatesSoFar;
      answer = await this.d.session.steer(blocks);
    } catch (err) {
      answer = { kind: "refused", reason: `could not steer: ${(err as Error)?.message ?? String(err)}` };
    }
    switch (answer.kind) {
      case "injected":
        this.injected = { events: [...(this.injected?.events ?? []), ...items], updatesAt };
        this.log(items, "native");
        this.d.delivered(
          items.map((p) => p.ev),
          "native",
          items.map((p) => Date.now() - p.at),
        );
        return;
      case "no-turn":
        // The prompt is ending: they wait for the next turn (handed back at close).
        this.d.logger.info(
          { evt: "turn.steer_late", events: items.map((p) => p.ev.id), reason: answer.reason },
          "the turn ended before the steer; the message starts the next turn",
        );
        this.queue.unshift(...items);
        return;
      case "refused":
      case "ambiguous":
        this.d.logger.warn(
          { evt: "turn.steer_refused", events: items.map((p) => p.ev.id), answer: answer.kind, reason: answer.reason },
          "native steer did not take; cancelling and merging instead",
        );
        this.nativeOff = true;
        this.queue.unshift(...items);
        if (this.phase === "prompting") this.requestMerge("steer");
        // "startedNewTurn" after our prompt ended: that turn is nobody's; stop it, so the
        // message is answered once, by the turn it is handed back to.
        else if (answer.kind === "ambiguous") this.d.session.cancelStray();
        return;
    }
  }

  private log(items: Pending[], method: SteerMethod, note?: string): void {
    this.d.logger.info(
      {
        evt: "turn.steered",
        method,
        events: items.map((p) => p.ev.id),
        waited_ms: items.map((p) => Date.now() - p.at),
        ...(note ? { note } : {}),
      },
      "mid-turn message given to the agent",
    );
  }
}
