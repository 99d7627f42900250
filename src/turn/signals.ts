/**
 * What people see in the channel while a turn runs (docs/architecture.md §3): 👀 when picked up, a
 * typing indicator every 3 s while the agent works, ⏳ while a stop gate waits for a
 * human, ✅ or ⚠️ at the end. All best effort: a lost signal never fails a turn.
 */
import type { Event } from "nostr-tools";
import { reaction, typing, type ThreadRef } from "../nostr/events.js";
import { KIND } from "../nostr/kinds.js";
import type { TurnPublisher } from "./ports.js";
import { nowSec } from "../base/time.js";

export const EMOJI = { seen: "👀", answered: "✅", failed: "⚠️", waiting: "⏳", denied: "🔒" } as const;

/** Buzz Desktop shows a typing event for 8 s (docs/protocol.md §4): refreshed every 3 s it never lapses, even with a delayed frame. */
const TYPING_INTERVAL_MS = 3000;

export interface SignalOptions {
  channel: string;
  thread: ThreadRef;
  /** The events of the batch; reactions go on each (capped, a batch can hold 50). */
  triggers: Pick<Event, "id" | "pubkey">[];
  typing: boolean;
  /** Reactions per batch at most; the newest triggers get them. */
  maxReactions?: number;
  /**
   * Of these triggers, the ones never given 👀 before (claimed now, durably): a turn that
   * runs again after a restart or a failure is not announced twice. Absent: all of them.
   * When it fails, 👀 goes out anyway (a missing one says "nobody is on it").
   */
  firstSeen?(ids: string[]): Promise<string[]>;
}

export class TurnSignals {
  private timer: NodeJS.Timeout | undefined;
  private waitReactions: Promise<(Event | null)[]> | undefined;
  private readonly targets: Pick<Event, "id" | "pubkey">[];

  constructor(
    private readonly out: TurnPublisher,
    private readonly opts: SignalOptions,
  ) {
    this.targets = opts.triggers.slice(-(opts.maxReactions ?? 5));
  }

  started(): void {
    const ids = this.targets.map((t) => t.id);
    const first = this.opts.firstSeen ? this.opts.firstSeen(ids).catch(() => ids) : Promise.resolve(ids);
    void first.then((fresh) => {
      for (const t of this.targets) if (fresh.includes(t.id)) this.out.signal(reaction(t, EMOJI.seen, this.opts.channel));
    });
    this.startTyping();
  }

  startTyping(): void {
    if (!this.opts.typing || this.timer) return;
    const tick = () => this.out.signal(typing(this.opts.channel, this.opts.thread));
    tick();
    this.timer = setInterval(tick, TYPING_INTERVAL_MS);
    this.timer.unref();
  }

  stopTyping(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  waiting(): void {
    this.stopTyping();
    if (this.waitReactions) return;
    this.waitReactions = Promise.all(
      this.targets.map((t) => this.out.publish(reaction(t, EMOJI.waiting, this.opts.channel)).catch(() => null)),
    );
  }

  finished(ok: boolean): void {
    this.stopTyping();
    this.react(ok ? EMOJI.answered : EMOJI.failed);
    // The wait is over: take ⏳ back (NIP-09 deletion of our own reaction) so ✅ stands alone.
    void this.waitReactions?.then((evs) => {
      const ids = evs.filter((e): e is Event => !!e).map((e) => e.id);
      if (ids.length)
        this.out.signal({
          kind: KIND.deletion,
          created_at: nowSec(),
          content: "",
          tags: [...ids.map((id) => ["e", id]), ["k", String(KIND.reaction)], ["h", this.opts.channel]],
        });
    });
  }

  private react(emoji: string): void {
    for (const t of this.targets) this.out.signal(reaction(t, emoji, this.opts.channel));
  }
}
