/**
 * Refusals from the per-scope cap, made visible. Each refused event gets a warn log line
 * at once; the notice callback is coalesced per scope per tick, so a 10,000-mention burst
 * produces a few notices listing who was skipped instead of thousands of posts.
 */
import type { Logger } from "../base/log.js";
import { npub } from "../config/keys.js";

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
  private scheduled: NodeJS.Immediate | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly notify: ((r: Refusal) => void) | undefined,
  ) {}

  add(scope: string, channel: string, reason: RefusalReason, ev: RefusedEvent): void {
    this.logger.warn({ evt: "queue.refused", reason, scope, channel, event: ev.id, author: npub(ev.author) });
    const key = `${reason}:${scope}`;
    let r = this.pending.get(key);
    if (!r) this.pending.set(key, (r = { scope, channel, reason, events: [] }));
    r.events.push(ev);
    this.scheduled ??= setImmediate(() => this.flush());
  }

  /** Delivers everything pending now (also called on close so nothing is left unannounced). */
  flush(): void {
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
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
