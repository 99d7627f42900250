/**
 * What the owner's `!cancel`, `!rotate` and `!status` do (the gate's `ControlActions`,
 * docs/architecture.md §3): they reach the queue, the running turns and the sessions, which
 * is why they live here and not beside the gate that recognises the commands.
 */
import type { ControlActions, ControlTarget, StatusFigures } from "../gate/control.js";
import { scopeKey } from "../queue/scope.js";
import type { TurnDispatcher } from "./dispatch.js";

export interface ControlActionsOptions {
  /** Ends the target's pending and running work; the running turns' ids come back to be cancelled. */
  scheduler: {
    cancel(target: ControlTarget): { runningTurnIds: number[]; ended: number } | Promise<{ runningTurnIds: number[]; ended: number }>;
    depth(): { queued: number };
  };
  dispatcher: Pick<TurnDispatcher, "cancelTurns" | "rotate" | "inFlight">;
  /** This daemon's stored session ids. */
  sessions: { forgetSession(scope: string): void; forgetChannelSessions(channel: string): void };
  /** Fleet mode: tells the other daemons to end their sessions of the target before their next turn there. */
  bumpRotation?: (key: string) => Promise<void>;
  /** The day's usage line for `!status`. */
  usage: () => string | undefined;
  shutdown: () => void;
}

/**
 * The scopes a `!rotate` applies to: typed in a thread, that thread's scope; typed top-level,
 * the channel's own scope and every thread scope in it.
 */
export function rotationScope(target: ControlTarget): (scopeKey: string) => boolean {
  if (target.thread) {
    const key = scopeKey(target.channel, target.thread);
    return (k) => k === key;
  }
  return (k) => k === target.channel || k.startsWith(`${target.channel}/`);
}

export function controlActions(o: ControlActionsOptions): ControlActions {
  return {
    cancel: async (target) => {
      const { runningTurnIds, ended } = await o.scheduler.cancel(target);
      o.dispatcher.cancelTurns(runningTurnIds);
      return ended;
    },
    rotate: async (target) => {
      const { runningTurnIds } = await o.scheduler.cancel(target);
      o.dispatcher.cancelTurns(runningTurnIds);
      const key = target.thread ? scopeKey(target.channel, target.thread) : undefined;
      await o.bumpRotation?.(key ?? target.channel);
      if (key) o.sessions.forgetSession(key);
      else o.sessions.forgetChannelSessions(target.channel);
      return o.dispatcher.rotate(rotationScope(target));
    },
    status: (): StatusFigures => ({ inFlight: o.dispatcher.inFlight, queued: o.scheduler.depth().queued, usage: o.usage() }),
    shutdown: () => o.shutdown(),
  };
}
