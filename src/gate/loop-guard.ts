/**
 * No loops with other bots (docs/conversations.md "Other agents"): two agents that mention
 * each other would answer each other for ever. In one thread (channel and root together; a
 * `reply_placement: flat` channel's top-level messages count as one thread) the agent answers
 * at most `policy.bot_exchanges` messages by agents with no person's message between them;
 * then it keeps silent there, says so in one `gate.loop_guard` line, and a person's message
 * in that thread starts the count again.
 *
 * Kept in memory, bounded: after a restart a loop gets at most one more round of
 * `bot_exchanges` answers, which is the cost of not writing every exchange down.
 */
import type { Logger } from "../base/log.js";
import { BoundedMap } from "../base/bounded-map.js";
import { npub } from "../config/keys.js";

/** Threads whose streak is remembered at most; the least recently touched forgotten first. */
const MAX_STREAKS = 1024;

export interface LoopGuardOptions {
  /** `policy.bot_exchanges`, read at each check so a reload applies at once. */
  limit(): number;
  logger: Logger;
}

export class LoopGuard {
  private readonly streaks = new BoundedMap<string, { count: number; silenced: boolean }>(MAX_STREAKS);

  constructor(private readonly o: LoopGuardOptions) {}

  /** The thread a message belongs to for the count: its channel and root (`flat`: the channel's top level). */
  static key(channel: string, root: string, flatTopLevel: boolean): string {
    return flatTopLevel ? `${channel}:top-level` : `${channel}:${root}`;
  }

  /** True while agents' messages are being counted in `key`'s thread (a person's message there would reset it). */
  counting(key: string): boolean {
    return this.streaks.has(key);
  }

  /**
   * An agent's message addressed to this agent in `key`'s thread: true when it may still be
   * answered (and it is counted), false once the thread has had its `limit` (logged once).
   */
  admit(key: string, ctx: { event: string; channel: string; author: string }): boolean {
    const s = this.streaks.get(key) ?? { count: 0, silenced: false };
    this.streaks.set(key, s);
    const limit = this.o.limit();
    if (s.count < limit) {
      s.count++;
      return true;
    }
    if (!s.silenced) {
      s.silenced = true;
      this.o.logger.info(
        { evt: "gate.loop_guard", event: ctx.event, channel: ctx.channel, author: npub(ctx.author), exchanges: s.count, limit },
        "another agent keeps the thread going: no more answers to agents there until a person writes (policy.bot_exchanges)",
      );
    }
    return false;
  }

  /**
   * An agent's message already let through (its author was found to be an agent only after
   * it was queued): counted, so the next one is judged with it.
   */
  count(key: string): void {
    const s = this.streaks.get(key) ?? { count: 0, silenced: false };
    s.count++;
    this.streaks.set(key, s);
  }

  /** A person wrote in `key`'s thread: agents may be answered again. */
  reset(key: string): void {
    this.streaks.delete(key);
  }
}
