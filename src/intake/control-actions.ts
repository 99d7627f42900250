/**
 * What the owner's `!cancel`, `!rotate` and `!status` do (the gate's `ControlActions`,
 * docs/architecture.md §3): they reach the queue, the running turns and the sessions, which
 * is why they live here and not beside the gate that recognises the commands.
 */
import type { ControlActions, ControlTarget, StatusFigures } from "../gate/control.js";
import type { Scheduler } from "../queue/scheduler.js";
import { scopeKey } from "../queue/scope.js";
import type { TurnDispatcher } from "../turn/dispatch.js";

export interface ControlActionsOptions {
  /**
   * `cancel` ends the target's pending and running work (the running turns' ids come back
   * to be cancelled); `rotate` tells whoever runs the target next (another daemon of a
   * fleet too) to end its session first.
   */
  scheduler: Pick<Scheduler, "cancel" | "rotate" | "currentDepth">;
  dispatcher: Pick<TurnDispatcher, "cancelTurns" | "rotate" | "inFlight">;
  /** This daemon's stored session ids. */
  sessions: { forgetSession(scope: string): void; forgetChannelSessions(channel: string): void };
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
      await o.scheduler.rotate(key ?? target.channel);
      if (key) o.sessions.forgetSession(key);
      else o.sessions.forgetChannelSessions(target.channel);
      return o.dispatcher.rotate(rotationScope(target));
    },
    status: async (): Promise<StatusFigures> => ({
      inFlight: o.dispatcher.inFlight,
      queued: (await o.scheduler.currentDepth()).queued,
      usage: o.usage(),
    }),
    shutdown: () => o.shutdown(),
  };
}
