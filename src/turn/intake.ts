/**
 * relay → gate → queue: the first steps of a mention (docs/architecture.md §3), for every
 * event the relay delivers, and the mid-turn join of an accepted event whose scope has a
 * turn running. An event is decided and, when accepted, queued in the tick it arrives, so
 * the next event (an edit, a deletion) finds it.
 */
import type { Event } from "nostr-tools";
import type { Logger } from "../base/log.js";
import { npub } from "../config/keys.js";
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
    joinRunning(turnId: number, eventId: string): boolean;
  };
  dispatcher: Pick<TurnDispatcher, "canTake" | "take">;
  amendments: Pick<Amendments, "edit" | "delete">;
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
      return d.sibling ? "sibling" : "accepted";
  }
}

export class Intake {
  constructor(private readonly o: IntakeOptions) {}

  async handle(ev: Event): Promise<void> {
    const o = this.o;
    if (o.stopping()) return;
    o.onReceived?.(ev);
    try {
      // Only a possible sibling's decision waits for a look-up; the decision's other effects
      // (answers, control commands) may take time.
      const pending = o.gate.decide(ev);
      const decision = pending instanceof Promise ? await pending : pending;
      const acted = o.gate.act(ev, decision);
      o.onDecided?.(ev, decision);
      const accepting = decision.action === "accept" ? o.scheduler.accept(ev, decision.channel.id) : false;
      if (decision.action === "accept" && (accepting instanceof Promise ? await accepting : accepting)) {
        o.logger.info({ evt: "gate.accepted", event: ev.id, channel: decision.channel.id, author: npub(ev.pubkey), ...(decision.sibling ? { sibling: decision.sibling } : {}) }, decision.sibling ? "mention accepted from a sibling agent" : "mention accepted");
        this.midTurn(ev, o.scheduler.scopeOf(ev, decision.channel.id).key, decision.policy.mid_turn);
      } else if (decision.action === "amend") {
        if (decision.amend === "edit") o.amendments.edit(ev, decision.targets[0]!, decision.channel.id, decision.policy.mid_turn);
        else void o.amendments.delete(ev, decision.targets).catch((err) => o.logger.error({ evt: "intake.error", event: ev.id, err: String(err) }, "could not handle a deletion"));
        // Decided, not queued as an event of its own: the cursor moves past it.
        o.store.noteSeen(decision.channel.id, ev.created_at);
      }
      // In a fleet the accept is the shared database's; this daemon's own resubscribe cursor
      // moves here, and it notes the event as handled (an edit of it is not a new mention).
      if (decision.action === "accept" && o.fleet) {
        o.store.noteSeen(decision.channel.id, ev.created_at);
        o.store.claimOnce(`accepted:${ev.id}`, Number.MAX_SAFE_INTEGER);
      }
      await acted;
    } catch (err) {
      o.logger.error({ evt: "intake.error", event: ev.id, err: String(err) }, "could not handle an event");
    }
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
      this.o.logger.debug({ evt: "queue.mid_turn_queued", event: ev.id, turn: turnId, mode }, "message arrived mid-turn; it waits for the next turn");
      return;
    }
    if (this.o.scheduler.joinRunning(turnId, ev.id)) dispatcher.take(turnId, ev, how, Date.now());
  }
}
