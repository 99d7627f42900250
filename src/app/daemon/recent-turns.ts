/**
 * The last turns that ended, for the status page's "what happened" (newest first): where,
 * who asked, how it ended, how long it took and what the agent reported it cost. In memory
 * only: a restart starts an empty list (the log's `turn.end` lines keep the whole history).
 */
import type { TurnOutcome } from "../../turn/run.js";
import type { TurnEnded } from "../../turn/dispatch.js";

/** Turns the status page lists. */
const RECENT_TURNS = 50;

export interface RecentTurn extends TurnEnded {
  status: TurnOutcome["status"];
  endedAt: number;
  seconds: number;
}

export class RecentTurns {
  private readonly list: RecentTurn[] = [];

  add(status: TurnOutcome["status"], seconds: number, turn: TurnEnded): void {
    this.list.push({ ...turn, status, seconds, endedAt: Date.now() });
    if (this.list.length > RECENT_TURNS) this.list.shift();
  }

  newestFirst(): RecentTurn[] {
    return [...this.list].reverse();
  }
}
