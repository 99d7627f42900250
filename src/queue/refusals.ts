/**
 * Refusals from the queue's caps, made visible. Each refused event gets a warn log line at
 * once; the notice callback is coalesced per scope and reason over a burst (until it has
 * been quiet for a moment, a second at most), so a 10,000-mention burst produces a few
 * notices listing who was skipped instead of thousands of posts.
 */
import type { Logger } from "../base/log.js";
import { npub } from "../config/keys.js";
import { Coalescer, type CoalesceOptions } from "../relay/coalesce.js";

/**
 * How a burst of refusals is gathered into one notice: it ends after `quietMs` with no refusal
 * (default 100 ms), or is announced `maxMs` after its first at the latest (default 1 s), so a
 * burst is one post per scope and reason while nobody waits long to hear of it.
 */
export const DEFAULT_NOTICE_TIMING: CoalesceOptions = { quietMs: 100, maxMs: 1_000 };

export type RefusalReason = "scope-cap" | "queue-full";

export interface RefusedEvent {
  id: string;
  author: string;
  created_at: number;
}

export interface Refusal {
  scope: string;
  channel: string;
  reason: RefusalReason;
  events: RefusedEvent[];
}

export class RefusalCoalescer {
  private pending = new Map<string, Refusal>();
  private readonly burst: Coalescer;

  constructor(
    private readonly logger: Logger,
    private readonly notify: ((r: Refusal) => void) | undefined,
    timing: CoalesceOptions = DEFAULT_NOTICE_TIMING,
  ) {
    this.burst = new Coalescer(() => this.flush(), timing);
  }

  add(scope: string, channel: string, reason: RefusalReason, ev: RefusedEvent): void {
    this.logger.warn({ evt: "queue.refused", reason, scope, channel, event: ev.id, author: npub(ev.author) });
    const key = `${reason}:${scope}`;
    let r = this.pending.get(key);
    if (!r) this.pending.set(key, (r = { scope, channel, reason, events: [] }));
    r.events.push(ev);
    this.burst.touch();
  }

  /** Delivers everything pending now (also called on close so nothing is left unannounced). */
  flush(): void {
    this.burst.cancel();
    const batch = [...this.pending.values()];
    this.pending.clear();
    for (const r of batch) {
      try {
        this.notify?.(r);
      } catch (err) {
        this.logger.error({ evt: "queue.refusal_notice_failed", scope: r.scope, err: (err as Error)?.message ?? String(err) });
      }
    }
  }
}
