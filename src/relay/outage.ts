/**
 * A relay call that may wait out an outage (docs/architecture.md §4, "a relay outage"): an
 * agent's buzz tool call keeps trying, past the call's usual attempts, until the relay
 * answers or the turn that asked is over. The waiting happens here, in the relay client's
 * own retries (publish.ts, http.ts, client.ts), never in a second loop around them.
 */

/** How long a call may wait out a relay outage, and who hears that it does. */
export interface OutageWait {
  /**
   * Aborted when the wait must end (the turn that asked is over). Until then an outage (no
   * connection, no `OK`, no HTTP answer, a 5xx or 429) is tried again past the call's usual
   * attempts; after it, the call ends as it would have without a wait.
   */
  until: AbortSignal;
  /** Told, with the outage's reason, of each retry past the usual attempts: the call is waiting for the relay. */
  onOutage?(reason: string): void;
}

/**
 * The longest pause between tries while a call waits out an outage: it tries again at
 * most 5 s after the relay (or its connection) is back, instead of after a pause grown
 * to the usual 10 s (publish) or 30 s (HTTP) caps.
 */
export const OUTAGE_PAUSE_CAP_MS = 5_000;

/** True while `wait` lets a call go on past its usual attempts. */
export const waiting = (wait: OutageWait | undefined): wait is OutageWait => wait !== undefined && !wait.until.aborted;
