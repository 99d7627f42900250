/**
 * Fleet mode: a reply's id goes to the database before the reply goes to the relay. With
 * the database briefly away the publish waits for it; after a lease period it gives up
 * (the turn fails and is retried), since another daemon may hold the scope by then.
 */
import { Backoff, sleep } from "../base/backoff.js";
import type { Logger } from "../base/log.js";
import { LeaseLostError } from "../queue/errors.js";

/** How long a reply waits for the database: one lease period. */
const RECORD_DEADLINE_MS = 30_000;

export function recordReplyDurably(
  record: (turnId: number, eventId: string) => Promise<void>,
  log: Logger,
): (turnId: number, eventId: string) => Promise<void> {
  return async (turnId, eventId) => {
    const deadline = Date.now() + RECORD_DEADLINE_MS;
    const backoff = new Backoff({ baseMs: 250, capMs: 5000, jitter: 0 });
    for (;;) {
      try {
        return await record(turnId, eventId);
      } catch (err) {
        const delay = backoff.next();
        if (err instanceof LeaseLostError || Date.now() + delay > deadline) throw err;
        log.warn(
          {
            evt: "state.record_retry",
            turn: turnId,
            event: eventId,
            err: err instanceof Error ? err.message : String(err),
            retry_ms: delay,
          },
          "cannot record the reply before publishing it; waiting for the database",
        );
        await sleep(delay);
      }
    }
  };
}
