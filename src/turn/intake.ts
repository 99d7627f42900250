/**
 * relay → gate → queue: the first steps of a mention (docs/architecture.md §3), for every
 * event the relay delivers, and the mid-turn join of an accepted event whose scope has a
 * turn running. An event is decided and, when accepted, queued in the tick it arrives, so
 * the next event (an edit, a deletion) finds it.
 */
import type { Event } from "nostr-tools";
import type { Logger } from "../base/log.js";
import { npub } from "../config/keys.js";
import { channelOf, threadRootOf } from "../nostr/events.js";
import { FORUM_KINDS, KIND } from "../nostr/kinds.js";
import type { ActiveConversations } from "../gate/participation.js";
import type { MidTurnMode } from "../config/schema.js";
import type { Decision, Gate } from "../gate/index.js";
import type { Scope } from "../queue/scope.js";
import type { Amendments } from "./amend.js";
import type { TurnDispatcher } from "./dispatch.js";
import { midTurnHow } from "./mid-turn.js";

export interface IntakeOptions {
  gate: Pick<Gate, "decide" | "act">;
  /** The single scheduler accepts synchronously (in this tick); a fleet's accept is the database's. */
  scheduler: {
    accept(ev: Event, channel: string): boolean | Promise<boolean>;
    scopeOf(ev: Event, channel: string): Scope;
    runningTurn(scopeKey: string): number | undefined;
    /**
     * The single scheduler joins at once and returns true (the caller gives it to the agent);
     * a fleet's writes the join to the database first, then calls `deliver` (false: the turn
     * could no longer take it, so it waits again), and returns false.
     */
    joinRunning(turnId: number, eventId: string, deliver: () => boolean): boolean;
  };
  dispatcher: Pick<TurnDispatcher, "canTake" | "take">;
  amendments: Pick<Amendments, "edit" | "delete">;
  /** Answers to the agents' waiting questions (turn/questions.ts) are taken there, never queued as mentions. */
  questions?: { offer(ev: Event, o: { fleet?: boolean; timeoutMs?: number }): boolean };
  /** `questions.timeout`, for how long another daemon of a fleet may wait on a question. */
  questionTimeout?: () => number;
  /** The conversations the agent is in (gate/participation.ts): marked by its mentions and its own messages. */
  active?: Pick<ActiveConversations, "mark">;
  /** The agent's own pubkey. */
  self?: string;
  /** This daemon's own store: its resubscribe cursor and, in a fleet, the events its gate accepted. */
  store: { noteSeen(channel: string, createdAt: number): void; claimOnce(key: string, ms: number): unknown };
  /** Fleet mode: the accept is the shared database's. */
  fleet: boolean;
  owner: () => string | undefined;
  /** Set once a shutdown began: events are not decided, so the cursor stays put and a restart replays them. */
  stopping: () => boolean;
  onReceived?: (ev: Event) => void;
  onDecided?: (ev: Event, decision: Decision) => void;
  logger: Logger;
}

/** The label a gate decision is counted under (`buzz_bridge_gate_decisions_total`). */
export function decisionLabel(d: Decision): string {
  switch (d.action) {
    case "drop":
    case "deny":
      return d.reason;
    case "control":
      return d.command;
    case "amend":
      return d.amend;
    case "accept":
      return d.workflowOwner ? "workflow" : d.continued ? "continued" : d.sibling ? "sibling" : "accepted";
  }
}

export class Intake {
  /** Fleet mode: accepts still being written to the shared database, by event id. */
  private readonly accepting = new Map<string, Promise<boolean>>();

  constructor(private readonly o: IntakeOptions) {}

  async handle(ev: Event): Promise<void> {
    const o = this.o;
    if (o.stopping()) return;
    o.onReceived?.(ev);
    try {
      if (o.questions?.offer(ev, { fleet: o.fleet, timeoutMs: o.questionTimeout?.() })) {
        const channel = channelOf(ev);
        if (channel) o.store.noteSeen(channel, ev.created_at);
        return;
      }
      // Only a possible sibling's decision waits for a look-up; the decision's other effects
      // (answers, control commands) may take time.
      const pending = o.gate.decide(ev);
      const decision = pending instanceof Promise ? await pending : pending;
      this.noteActivity(ev, decision);
      const acted = o.gate.act(ev, decision);
      o.onDecided?.(ev, decision);
      const accepting = decision.action === "accept" ? o.scheduler.accept(ev, decision.channel.id) : false;
      if (accepting instanceof Promise) {
        // Noted as handled in this tick, so an edit or deletion right behind it is an
        // amendment, which waits for this write before it reads the shared queue.
        o.store.claimOnce(`accepted:${ev.id}`, Number.MAX_SAFE_INTEGER);
        this.accepting.set(ev.id, accepting);
        const settled = () => this.accepting.delete(ev.id);
        void accepting.then(settled, settled);
      }
      const fresh = accepting instanceof Promise ? await accepting : accepting;
      if (decision.action === "accept" && fresh && decision.continued) {
        o.logger.info(
          { evt: "gate.continued", reason: decision.continued, event: ev.id, channel: decision.channel.id, author: npub(ev.pubkey) },
          decision.continued === "thread"
            ? "a reply in a thread the agent is in: taken as addressed to it"
            : "a message in a channel the agent is active in: taken as addressed to it",
        );
      } else if (decision.action === "accept" && fresh) {
        o.logger.info(
          {
            evt: "gate.accepted",
            event: ev.id,
            channel: decision.channel.id,
            author: npub(ev.pubkey),
            ...(decision.sibling ? { sibling: decision.sibling } : {}),
          },
          decision.sibling ? "mention accepted from a sibling agent" : "mention accepted",
        );
      }
      // In a fleet the daemon running the scope's turn may not be the one that stored the
      // message first: each daemon looks, and only the holder finds the turn running.
      if (decision.action === "accept" && (fresh || o.fleet)) {
        this.midTurn(ev, o.scheduler.scopeOf(ev, decision.channel.id).key, decision.policy.mid_turn);
      } else if (decision.action === "amend") {
        const amend = () =>
          decision.amend === "edit"
            ? o.amendments.edit(ev, decision.targets[0]!, decision.channel.id, decision.policy.mid_turn)
            : o.amendments.delete(ev, decision.targets);
        const pending = decision.targets.flatMap((t) => this.accepting.get(t) ?? []);
        const amended = pending.length ? Promise.allSettled(pending).then(amend) : amend();
        void amended.catch((err) =>
          o.logger.error(
            { evt: "intake.error", event: ev.id, err: String(err) },
            `could not handle ${decision.amend === "edit" ? "an edit" : "a deletion"}`,
          ),
        );
        // Decided, not queued as an event of its own: the cursor moves past it.
        o.store.noteSeen(decision.channel.id, ev.created_at);
      }
      // In a fleet the accept is the shared database's; this daemon's own resubscribe cursor moves here.
      if (decision.action === "accept" && o.fleet) o.store.noteSeen(decision.channel.id, ev.created_at);
      await acted;
    } catch (err) {
      o.logger.error({ evt: "intake.error", event: ev.id, err: String(err) }, "could not handle an event");
    }
  }

  /**
   * Participation's record of the conversations the agent is in: a message it acts on (a
   * mention, or one that continues a conversation), and a message of its own (its replies,
   * from this daemon or another of the fleet), mark the thread and its channel active.
   */
  private noteActivity(ev: Event, decision: Decision): void {
    const active = this.o.active;
    if (!active) return;
    if (ev.kind !== KIND.message && !FORUM_KINDS.includes(ev.kind)) return;
    if (decision.action !== "accept" && ev.pubkey !== this.o.self) return;
    active.mark(threadRootOf(ev), channelOf(ev));
  }

  /**
   * An accepted event whose scope has a turn running: under `mid_turn` steer/interrupt it
   * joins that turn in the queue (durably) and goes to the agent now; otherwise it waits
   * for the next turn, as every queued event does.
   */
  midTurn(ev: Event, scope: string, mode: MidTurnMode): void {
    const turnId = this.o.scheduler.runningTurn(scope);
    if (turnId === undefined) return;
    const how = midTurnHow(mode, ev.pubkey === this.o.owner());
    const dispatcher = this.o.dispatcher;
    if (!how || !dispatcher.canTake(turnId, ev)) {
      this.o.logger.debug(
        { evt: "queue.mid_turn_queued", event: ev.id, turn: turnId, mode },
        "message arrived mid-turn; it waits for the next turn",
      );
      return;
    }
    const at = Date.now();
    const deliver = () => {
      if (!dispatcher.canTake(turnId, ev)) return false;
      dispatcher.take(turnId, ev, how, at);
      return true;
    };
    if (this.o.scheduler.joinRunning(turnId, ev.id, deliver)) dispatcher.take(turnId, ev, how, at);
  }
}
