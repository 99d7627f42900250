/**
 * Fleet mode: a reply's id goes to the database before the reply goes to the relay. With
 * the database briefly away the publish waits for it; after a lease period it gives up
 * (the turn fails and is retried), since another daemon may hold the scope by then.
 */
import { Backoff, sleep } from "../base/backoff.js";
import type { Logger } from "../base/log.js";
import { LeaseLostError } from "../queue/errors.js";
import { FLEET_LEASE_MS } from "../queue/pg-leases.js";

export function recordReplyDurably(
  record: (turnId: number, eventId: string) => Promise<void>,
  log: Logger,
): (turnId: number, eventId: string) => Promise<void> {
  return async (turnId, eventId) => {
    // One lease period: past it another daemon may hold the scope.
    const deadline = Date.now() + FLEET_LEASE_MS;
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
