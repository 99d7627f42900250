/**
 * Owner control commands (docs/protocol.md §6): `!cancel`, `!rotate`, `!status`, `!shutdown`.
 * The gate recognised and verified the command; this executes it through the daemon's
 * interface and publishes the outcome as a kind 40099 `{type, actor, target}` in the
 * command's thread — also for no-ops, so the owner always sees that it was heard.
 */
import type { Event, EventTemplate } from "nostr-tools";
import type { Logger } from "../base/log.js";
import { systemMessage, replyRefFor, threadRootOf } from "../nostr/events.js";
import type { ControlCommand } from "./decide.js";

/**
 * What a command applies to. Typed inside a thread: that thread's scope. Typed top-level:
 * every scope of the channel (with thread scopes a top-level `!cancel` would otherwise
 * name a thread that has no work).
 */
export interface ControlTarget {
  channel: string;
  /** Thread root when the command was typed in a thread; undefined = the whole channel. */
  thread?: string;
}

/** The daemon's side of the commands; each returns how many things it affected. */
export interface ControlActions {
  /** Ends pending and running work in the target as cancelled-by-owner; returns turns+events ended. */
  cancel(target: ControlTarget): Promise<number>;
  /** Drops the target's agent session(s) so the next mention starts fresh; returns sessions rotated. */
  rotate(target: ControlTarget): Promise<number>;
  /** `usage`: the day's token and cost summary, when the daemon keeps one. */
  status(): Promise<StatusFigures>;
  /** Begins graceful shutdown; called after the outcome is published so the owner sees it. */
  shutdown(): void;
}

export interface StatusFigures {
  inFlight: number;
  queued: number;
  usage?: string;
}

export interface ControlOptions {
  self: string;
  actions: ControlActions;
  publish(template: EventTemplate): Promise<unknown>;
  logger: Logger;
}

export interface ControlOutcome {
  type: string;
  outcome: string;
  [k: string]: unknown;
}

function controlTargetOf(ev: Event, channel: string): ControlTarget {
  const root = threadRootOf(ev);
  return root === ev.id ? { channel } : { channel, thread: root };
}

export class ControlExecutor {
  constructor(private readonly opts: ControlOptions) {}

  async execute(ev: Event, command: ControlCommand, channel: string): Promise<ControlOutcome> {
    const target = controlTargetOf(ev, channel);
    const outcome = await this.run(command, target);
    const payload = { ...outcome, actor: ev.pubkey, target: this.opts.self };
    this.opts.logger.info({ evt: "gate.control", command, channel, thread: target.thread ?? null, event: ev.id, ...outcome });
    try {
      await this.opts.publish(systemMessage(channel, payload, replyRefFor(ev)));
    } catch (err) {
      this.opts.logger.warn({ evt: "gate.control_publish_failed", command, event: ev.id, err: (err as Error)?.message ?? String(err) });
    }
    if (command === "!shutdown") await this.opts.actions.shutdown();
    return outcome;
  }

  private async run(command: ControlCommand, target: ControlTarget): Promise<ControlOutcome> {
    const a = this.opts.actions;
    switch (command) {
      case "!cancel": {
        const n = await a.cancel(target);
        return { type: "control.cancel", outcome: n > 0 ? "cancelled" : "nothing-to-cancel", count: n };
      }
      case "!rotate": {
        const n = await a.rotate(target);
        return { type: "control.rotate", outcome: n > 0 ? "rotated" : "nothing-to-rotate", count: n };
      }
      case "!status": {
        const s = await a.status();
        return {
          type: "control.status",
          outcome: "ok",
          in_flight: s.inFlight,
          queued: s.queued,
          ...(s.usage !== undefined ? { usage: s.usage } : {}),
          text: `${s.inFlight} turn${s.inFlight === 1 ? "" : "s"} in flight, ${s.queued} event${s.queued === 1 ? "" : "s"} queued${s.usage ? `; ${s.usage}` : ""}`,
        };
      }
      case "!shutdown":
        return { type: "control.shutdown", outcome: "shutting-down" };
    }
  }
}
