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
 *
 * What changes the queue is decided by the queue's backend, atomically. In a fleet
 * (docs/architecture.md §3) every daemon hears the edit or deletion: the first daemon's
 * write wins, the others find it done, and only the daemon running the message's turn
 * joins a correction into it or stops it.
 */
import type { Event } from "nostr-tools";
import type { Logger } from "../base/log.js";
import { nowSec } from "../base/time.js";
import type { MidTurnMode } from "../config/schema.js";
import { npub } from "../config/keys.js";
import type { QueueBackend } from "../queue/backend.js";
import type { Scheduler } from "../queue/scheduler.js";
import { parseScopeKey } from "../queue/scope.js";
import { KIND } from "../nostr/kinds.js";
import { EMOJI } from "../turn/signals.js";
import type { TurnPublisher } from "../turn/ports.js";

export interface AmendDeps {
  store: Pick<QueueBackend, "event" | "turn" | "replaceQueuedContent">;
  /** `runningTurn`: the turn running here in the scope (in a fleet: only on the daemon holding the scope). */
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

  async edit(ev: Event, targetId: string, channel: string, mode: MidTurnMode): Promise<void> {
    const log = this.d.logger;
    let target = await this.d.store.event(targetId);
    if (!target)
      return void log.info(
        { evt: "gate.edit_refused", event: ev.id, target: targetId, reason: "unknown-target" },
        "edit of a message the bridge does not know; ignored",
      );
    if (target.event.pubkey !== ev.pubkey) {
      return void log.info(
        { evt: "gate.edit_refused", event: ev.id, target: targetId, author: npub(ev.pubkey), reason: "not-author" },
        "only a message's author may edit it; ignored",
      );
    }
    const earlier = this.queuedEdits.get(targetId);
    if (
      earlier &&
      (await this.d.store.event(earlier))?.state === "waiting" &&
      (await this.d.store.replaceQueuedContent(earlier, ev.content, ev.id))
    ) {
      return void log.info(
        { evt: "queue.edited", event: ev.id, target: targetId, replaced: earlier },
        "a newer edit replaced the queued one",
      );
    }
    // Not yet given to an agent (waiting, or in a turn that waits for its retry): decided by the store, atomically.
    if (await this.d.store.replaceQueuedContent(targetId, ev.content, ev.id)) {
      return void log.info(
        { evt: "queue.edited", event: ev.id, target: targetId, state: target.state },
        "edit replaced the queued message's text",
      );
    }
    target = (await this.d.store.event(targetId)) ?? target;
    // A fleet's daemon that heard the edit late: another one applied it before the turn started.
    if ((target.event as Event & { edited?: string }).edited === ev.id) return;
    if (target.state !== "in_turn") {
      return void log.info(
        { evt: "gate.edit_refused", event: ev.id, target: targetId, reason: "already-answered", state: target.state },
        "edit of a message whose turn has ended; ignored",
      );
    }
    // Not fresh: a replay, or another daemon of the fleet stored the correction first; the
    // daemon running the scope's turn joins it all the same (a waiting event joins once).
    const fresh = await this.d.scheduler.accept(ev, channel, parseScopeKey(target.scope));
    this.queuedEdits.set(targetId, ev.id);
    if (fresh)
      log.info(
        { evt: "gate.accepted", event: ev.id, channel, author: npub(ev.pubkey), edits: targetId },
        "edit of a message in a running turn accepted",
      );
    this.d.midTurn(ev, target.scope, mode);
  }

  async delete(ev: Event, targetIds: string[]): Promise<void> {
    const log = this.d.logger;
    for (const id of targetIds) {
      let target = await this.d.store.event(id);
      if (!target) continue;
      if (target.event.pubkey !== ev.pubkey) {
        log.info(
          { evt: "gate.delete_refused", event: ev.id, target: id, author: npub(ev.pubkey), reason: "not-author" },
          "only a message's author may delete it; ignored",
        );
        continue;
      }
      if (target.state === "waiting") {
        if (await this.d.scheduler.dropWaiting(id)) {
          log.info({ evt: "queue.deleted", event: ev.id, target: id }, "its author deleted a queued message; it gets no turn and no reply");
          await this.takeBackSeen(id, target.channel);
          continue;
        }
        target = (await this.d.store.event(id)) ?? target;
        // Another daemon of the fleet dropped it first.
        if (target.state === "deleted") continue;
      }
      const running = target.turn_id !== null && this.d.scheduler.runningTurn(target.scope) === target.turn_id;
      const turn = target.turn_id !== null ? await this.d.store.turn(target.turn_id) : undefined;
      const triggers = turn?.trigger_ids ?? [];
      if (
        target.state === "in_turn" &&
        running &&
        triggers.length === 1 &&
        (await this.d.scheduler.cancelRunning(target.turn_id!, "its message was deleted by its author"))
      ) {
        log.info(
          { evt: "turn.deleted", event: ev.id, target: id, turn: target.turn_id },
          "its author deleted the turn's only message; the turn is stopped",
        );
        this.d.cancelTurns([target.turn_id!]);
        continue;
      }
      if (target.state === "in_turn" && !running && turn?.state === "running") {
        log.debug(
          { evt: "gate.delete_ignored", event: ev.id, target: id, reason: "held-elsewhere" },
          "the message's turn does not run here (another daemon of the fleet runs it, or it is about to be resumed); whoever runs it handles the deletion",
        );
        continue;
      }
      this.d.retract(target.scope, id, ev.pubkey);
      log.info(
        {
          evt: "gate.delete_ignored",
          event: ev.id,
          target: id,
          state: target.state,
          reason: target.state === "in_turn" ? "other-triggers" : "already-answered",
        },
        "deletion of a message that is not the only one of a running turn or was answered; the agent is told it was retracted",
      );
    }
  }

  /** NIP-09 deletion of our own 👀 on the message, so nobody thinks it is still being worked on. */
  private async takeBackSeen(id: string, channel: string): Promise<void> {
    const mine = await this.d.ownReactions(id).catch(() => [] as Event[]);
    const seen = mine.filter((r) => r.content === EMOJI.seen).map((r) => r.id);
    if (!seen.length) return;
    this.d.out.signal({
      kind: KIND.deletion,
      created_at: nowSec(),
      content: "",
      tags: [...seen.map((r) => ["e", r]), ["k", String(KIND.reaction)], ["h", channel]],
    });
  }
}
