/**
 * A reply's id goes to the queue before the reply goes to the relay, so whoever runs the
 * turn again after a crash asks the relay about it instead of answering twice. With the
 * state store briefly away (a database outage, a full disk) the publish waits for it; after
 * a lease period it gives up (the turn fails and is retried), since in a fleet another
 * daemon may hold the scope by then. A lost lease gives up at once.
 */
import { retry } from "../base/retry.js";
import type { Logger } from "../base/log.js";
import { LeaseLostError } from "../queue/errors.js";
import { FLEET_LEASE_MS } from "../queue/pg-leases.js";

export function recordReplyDurably(
  record: (turnId: number, eventId: string) => Promise<void>,
  log: Logger,
): (turnId: number, eventId: string) => Promise<void> {
  return (turnId, eventId) =>
    retry(() => record(turnId, eventId), {
      backoff: { baseMs: 250, capMs: 5000, jitter: 0 },
      // One lease period: past it another daemon may hold the scope.
      deadline: Date.now() + FLEET_LEASE_MS,
      retryable: (err) => !(err instanceof LeaseLostError),
      onRetry: (_attempt, err, delay) =>
        log.warn(
          {
            evt: "state.record_retry",
            turn: turnId,
            event: eventId,
            err: err instanceof Error ? err.message : String(err),
            retry_ms: delay,
          },
          "cannot record the reply before publishing it; waiting for the state store",
        ),
    });
}
