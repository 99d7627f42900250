/**
 * Publishing with bounded retries (docs/protocol.md §5): the SAME signed event is re-sent (the relay
 * de-duplicates by id, so a retry after a lost `OK` reports `duplicate`, which is success).
 * Only outcomes that can succeed later are retried; a refusal is returned with the relay's reason.
 *
 * A `rate-limited:` refusal (`OK false`, or the `NOTICE` older relays send) is not a failed
 * attempt: the shared gate holds every send for the relay's stated time, and the event goes
 * again when it lifts, for as long as `rateLimitedMaxMs` allows, so a reply is never lost
 * to a busy minute. Typing and presence are dropped instead of waiting. Each attempt goes on
 * the client's current socket, so a publish that meets a socket being replaced moves on to
 * its successor at once.
 *
 * A publish given a `wait` (an agent's buzz tool call, bounded by its turn: outage.ts)
 * keeps re-sending through a relay outage past its attempts, pausing at most 5 s, until
 * the wait ends: this is the only loop a reply goes through while the relay is away.
 */
import type { Event } from "nostr-tools";
import type { Logger } from "../base/log.js";
import { reasonPrefix } from "../base/backoff.js";
import { retry } from "../base/retry.js";
import { RETIRING, type RelayConnection } from "./connection.js";
import { KIND } from "../nostr/kinds.js";
import { isRetryable, isSuccess, type PublishOutcome } from "./outcome.js";
import { OUTAGE_PAUSE_CAP_MS, waiting, type OutageWait } from "./outage.js";
import { priorityOfKind } from "./frame-budget.js";

export interface PublishOptions {
  /** Attempts in total, not counting rate-limited ones. Default 4; typing (20002) always gets 1: a late indicator is noise. */
  attempts?: number;
  /** Wait for each `OK` this long. Default 10 s. */
  timeoutMs?: number;
  /** Wait for a (re)connection this long per attempt. Default 30 s. */
  reconnectWaitMs?: number;
  /** Pause between attempts (grows ×2 up to 10 s; 5 s while waiting out an outage). Default 500 ms. */
  retryBaseMs?: number;
  /** Keep re-sending after `rate-limited:` refusals for this long in all. Default 10 min. */
  rateLimitedMaxMs?: number;
  /**
   * Wait out a relay outage (no connection, no `OK`) past `attempts` until `wait.until`
   * aborts (outage.ts); default none: an outage ends the publish after `attempts`.
   */
  wait?: OutageWait;
}

/** Outcomes that mean the relay was not there to answer. */
const outage = (o: PublishOutcome) => o.status === "disconnected" || o.status === "timeout";

/** The socket to use now (a client replaces its socket before the relay's deadline). */
type ConnectionSource = RelayConnection | (() => RelayConnection);

export async function publishWithRetry(
  source: ConnectionSource,
  ev: Event,
  opts: PublishOptions = {},
  log?: Logger,
): Promise<PublishOutcome> {
  const current = typeof source === "function" ? source : () => source;
  const typing = ev.kind === KIND.typing;
  // Telemetry goes once and is dropped, not queued, while the relay asks us to hold back.
  const droppable = priorityOfKind(ev.kind) === "signal";
  const attempts = typing ? 1 : Math.max(1, opts.attempts ?? 4);
  const wait = typing ? undefined : opts.wait;
  const capMs = wait ? OUTAGE_PAUSE_CAP_MS : 10_000;
  const limitedUntil = Date.now() + (opts.rateLimitedMaxMs ?? 600_000);
  let made = 0;
  let limited = 0;
  // What the last try met: a rate limit (not a failed attempt), or a socket being replaced.
  let rateLimited = false;
  let moved = false;
  const last = await retry(
    async () => {
      const conn = current();
      if (!conn.authenticated && !typing) await conn.waitAuthenticated(opts.reconnectWaitMs ?? 30_000);
      const out = await conn.sendEvent(ev, { timeoutMs: opts.timeoutMs, droppable });
      rateLimited = out.status === "refused" && reasonPrefix(out.reason ?? "") === "rate-limited";
      moved = out.status === "disconnected" && out.reason === RETIRING;
      if (rateLimited) limited++;
      else if (!moved) made++;
      out.attempts = made;
      if (limited) out.rateLimited = limited;
      return out;
    },
    {
      backoff: { baseMs: opts.retryBaseMs ?? 500, capMs },
      again: (out) => {
        if (isSuccess(out) || !isRetryable(out) || droppable) return false;
        if (rateLimited) return Date.now() < limitedUntil;
        return made < attempts || (outage(out) && waiting(wait));
      },
      // The successor socket is up: no pause. A rate limit: the gate holds the next send for the relay's stated time.
      delayMs: () => (moved || rateLimited ? 0 : undefined),
      onRetry: (_try, failure) => {
        if (moved) return;
        const out = failure as PublishOutcome;
        log?.info(
          { evt: "relay.publish_retry", event: ev.id, kind: ev.kind, status: out.status, reason: out.reason, attempt: made },
          rateLimited ? "publish refused for the relay's rate limit; re-sent when the pause ends" : "publish will be retried",
        );
        if (!rateLimited && made >= attempts) wait?.onOutage?.(`${out.status}${out.reason ? `: ${out.reason}` : ""}`);
      },
    },
  );
  if (!isSuccess(last) && last.status !== "dropped") {
    // A lost typing indicator is noise (the next one follows in 3 s); anything else is worth a warning.
    const line = {
      evt: "relay.publish_failed",
      event: ev.id,
      kind: ev.kind,
      status: last.status,
      reason: last.reason,
      attempts: last.attempts,
    };
    if (droppable) log?.debug(line, `typing/presence not sent: ${last.reason ?? last.status}`);
    else log?.warn(line, `publish ${last.status}: ${last.reason ?? ""}`);
  }
  return last;
}
