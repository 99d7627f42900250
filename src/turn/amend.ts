/**
 * Edits (kind 40003) and deletions (kind 5, NIP-09, or 9005, NIP-29) of messages the bridge accepted, by
 * their author (anyone else's are refused and logged):
 *
 * - an edit of a message still waiting replaces its text in the queue (the turn will see
 *   the corrected text, labelled as edited); an edit of a message whose turn is running is
 *   a mid-turn message of that scope under the channel's `mid_turn` (framed as a
 *   correction); an edit of a message already answered is refused (logged);
 * - a deletion of a waiting message drops it (no turn, no reply, our 👀 taken back); of a
 *   running turn's only trigger, it stops that turn; of one trigger among several, or of an
 *   answered message, nothing stops, and the agent is told in its next prompt that the
 *   message was retracted.
 *
 * Every outcome is one log line with its reason. A storm of edits to one waiting message
 * rewrites one row; edits arriving mid-turn are coalesced while they wait the same way.
 */
import type { Event } from "nostr-tools";
import type { Logger } from "../base/log.js";
import type { MidTurnMode } from "../config/schema.js";
import type { QueueStore, Scheduler } from "../queue/index.js";
import { parseScopeKey } from "../queue/scope.js";
import { KIND } from "../relay/kinds.js";
import { EMOJI } from "./signals.js";
import type { TurnPublisher } from "./ports.js";

export interface AmendDeps {
  store: QueueStore;
  scheduler: Pick<Scheduler, "runningTurn" | "accept" | "dropWaiting" | "cancelRunning">;
  /** Stops running turns at the agent (the queue has already ended them). */
  cancelTurns(turnIds: number[]): void;
  /** Tells a scope's session that a message it saw was deleted. */
  retract(scope: string, eventId: string, author: string): void;
  /** An accepted event in a scope with a running turn: the daemon's mid-turn step. */
  midTurn(ev: Event, scope: string, mode: MidTurnMode): void;
  /** Our own reactions on an event (to take 👀 back). */
  ownReactions(eventId: string): Promise<Event[]>;
  out: TurnPublisher;
  logger: Logger;
}

export class Amendments {
  /** Target id → the latest edit of it that was queued as a message of its own. */
  private readonly queuedEdits = new Map<string, string>();

  constructor(private readonly d: AmendDeps) {}

  edit(ev: Event, targetId: string, channel: string, mode: MidTurnMode): void {
    const log = this.d.logger;
    const target = this.d.store.event(targetId);
    if (!target) return void log.info({ evt: "gate.edit_refused", event: ev.id, target: targetId, reason: "unknown-target" }, "edit of a message the bridge does not know; ignored");
    if (target.event.pubkey !== ev.pubkey) {
      return void log.info({ evt: "gate.edit_refused", event: ev.id, target: targetId, author: ev.pubkey, reason: "not-author" }, "only a message's author may edit it; ignored");
    }
    const earlier = this.queuedEdits.get(targetId);
    if (earlier && this.d.store.event(earlier)?.state === "waiting") {
      this.d.store.replaceContent(earlier, ev.content, ev.id);
      return void log.info({ evt: "queue.edited", event: ev.id, target: targetId, replaced: earlier }, "a newer edit replaced the queued one");
    }
    const running = target.turn_id !== null && this.d.scheduler.runningTurn(target.scope) === target.turn_id;
    if (target.state === "waiting" || (target.state === "in_turn" && !running)) {
      // Not yet given to the agent (waiting, or in a turn that waits for its retry).
      this.d.store.replaceContent(targetId, ev.content, ev.id);
      return void log.info({ evt: "queue.edited", event: ev.id, target: targetId, state: target.state }, "edit replaced the queued message's text");
    }
    if (target.state !== "in_turn") {
      return void log.info({ evt: "gate.edit_refused", event: ev.id, target: targetId, reason: "already-answered", state: target.state }, "edit of a message whose turn has ended; ignored");
    }
    if (!this.d.scheduler.accept(ev, channel, parseScopeKey(target.scope))) return;
    this.queuedEdits.set(targetId, ev.id);
    log.info({ evt: "gate.accepted", event: ev.id, channel, author: ev.pubkey, edits: targetId }, "edit of a message in a running turn accepted");
    this.d.midTurn(ev, target.scope, mode);
  }

  async delete(ev: Event, targetIds: string[]): Promise<void> {
    const log = this.d.logger;
    for (const id of targetIds) {
      const target = this.d.store.event(id);
      if (!target) continue;
      if (target.event.pubkey !== ev.pubkey) {
        log.info({ evt: "gate.delete_refused", event: ev.id, target: id, author: ev.pubkey, reason: "not-author" }, "only a message's author may delete it; ignored");
        continue;
      }
      if (target.state === "waiting" && this.d.scheduler.dropWaiting(target.scope, id)) {
        log.info({ evt: "queue.deleted", event: ev.id, target: id }, "its author deleted a queued message; it gets no turn and no reply");
        await this.takeBackSeen(id, target.channel);
        continue;
      }
      const running = target.turn_id !== null && this.d.scheduler.runningTurn(target.scope) === target.turn_id;
      const triggers = target.turn_id !== null ? (this.d.store.turn(target.turn_id)?.trigger_ids ?? []) : [];
      if (target.state === "in_turn" && running && triggers.length === 1 && this.d.scheduler.cancelRunning(target.turn_id!, "its message was deleted by its author")) {
        log.info({ evt: "turn.deleted", event: ev.id, target: id, turn: target.turn_id }, "its author deleted the turn's only message; the turn is stopped");
        this.d.cancelTurns([target.turn_id!]);
        continue;
      }
      this.d.retract(target.scope, id, ev.pubkey);
      log.info(
        { evt: "gate.delete_ignored", event: ev.id, target: id, state: target.state, reason: target.state === "in_turn" ? "other-triggers" : "already-answered" },
        "deletion of a message that is not the only one of a running turn or was answered; the agent is told it was retracted",
      );
    }
  }

  /** NIP-09 deletion of our own 👀 on the message, so nobody thinks it is still being worked on. */
  private async takeBackSeen(id: string, channel: string): Promise<void> {
    const mine = await this.d.ownReactions(id).catch(() => [] as Event[]);
    const seen = mine.filter((r) => r.content === EMOJI.seen).map((r) => r.id);
    if (!seen.length) return;
    this.d.out.signal({ kind: KIND.deletion, created_at: Math.floor(Date.now() / 1000), content: "", tags: [...seen.map((r) => ["e", r]), ["k", String(KIND.reaction)], ["h", channel]] });
  }
}
