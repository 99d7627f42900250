/**
 * The mid-turn step of an accepted event (docs/architecture.md §3): when its scope has a turn
 * running here, under `mid_turn` steer/interrupt it joins that turn in the queue (durably)
 * and goes to the agent now; otherwise it waits for the next turn, as every queued event
 * does. Taken by intake for a mention and by the amendments for an edit of a message whose
 * turn runs.
 */
import type { Event } from "nostr-tools";
import type { Logger } from "../base/log.js";
import type { MidTurnMode } from "../config/schema.js";
import type { Scheduler } from "../queue/scheduler.js";
import type { TurnDispatcher } from "../turn/dispatch.js";
import { midTurnHow } from "../turn/mid-turn.js";

export interface MidTurnParts {
  scheduler: Pick<Scheduler, "runningTurn" | "joinRunning">;
  dispatcher: Pick<TurnDispatcher, "canTake" | "take">;
  owner: () => string | undefined;
  logger: Logger;
}

export function joinMidTurn(p: MidTurnParts, ev: Event, scope: string, mode: MidTurnMode): void {
  const turnId = p.scheduler.runningTurn(scope);
  if (turnId === undefined) return;
  const how = midTurnHow(mode, ev.pubkey === p.owner());
  const dispatcher = p.dispatcher;
  if (!how || !dispatcher.canTake(turnId, ev)) {
    p.logger.debug(
      { evt: "queue.mid_turn_queued", event: ev.id, turn: turnId, mode },
      "message arrived mid-turn; it waits for the next turn",
    );
    return;
  }
  const at = Date.now();
  p.scheduler.joinRunning(turnId, ev.id, () => {
    if (!dispatcher.canTake(turnId, ev)) return false;
    dispatcher.take(turnId, ev, how, at);
    return true;
  });
}
