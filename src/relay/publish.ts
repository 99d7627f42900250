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
 */
import type { Event } from "nostr-tools";
import type { Logger } from "../base/log.js";
import { Backoff, reasonPrefix } from "../base/backoff.js";
import { RETIRING, type RelayConnection } from "./connection.js";
import { KIND } from "../nostr/kinds.js";
import { isRetryable, isSuccess, type PublishOutcome } from "./outcome.js";
import { sleep } from "../base/backoff.js";
import { priorityOfKind } from "./frame-budget.js";

export interface PublishOptions {
  /** Attempts in total, not counting rate-limited ones. Default 4; typing (20002) always gets 1: a late indicator is noise. */
  attempts?: number;
  /** Wait for each `OK` this long. Default 10 s. */
  timeoutMs?: number;
  /** Wait for a (re)connection this long per attempt. Default 30 s. */
  reconnectWaitMs?: number;
  /** Pause between attempts (grows ×2). Default 500 ms. */
  retryBaseMs?: number;
  /** Keep re-sending after `rate-limited:` refusals for this long in all. Default 10 min. */
  rateLimitedMaxMs?: number;
}

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
  const pause = new Backoff({ baseMs: opts.retryBaseMs ?? 500, capMs: 10_000 });
  const limitedUntil = Date.now() + (opts.rateLimitedMaxMs ?? 600_000);
  let last: PublishOutcome = { status: "disconnected", reason: "not attempted" };
  let made = 0;
  let limited = 0;
  for (;;) {
    const conn = current();
    if (!conn.authenticated && !typing) await conn.waitAuthenticated(opts.reconnectWaitMs ?? 30_000);
    last = await conn.sendEvent(ev, { timeoutMs: opts.timeoutMs, droppable });
    const rateLimited = last.status === "refused" && reasonPrefix(last.reason ?? "") === "rate-limited";
    const moved = last.status === "disconnected" && last.reason === RETIRING;
    if (rateLimited) limited++;
    else if (!moved) made++;
    last.attempts = made;
    if (limited) last.rateLimited = limited;
    if (isSuccess(last) || !isRetryable(last) || droppable) break;
    if (rateLimited ? Date.now() >= limitedUntil : made >= attempts) break;
    if (moved) continue; // the successor socket is up: no pause
    log?.info(
      { evt: "relay.publish_retry", event: ev.id, kind: ev.kind, status: last.status, reason: last.reason, attempt: made },
      rateLimited ? "publish refused for the relay's rate limit; re-sent when the pause ends" : "publish will be retried",
    );
    // A rate-limited refusal: the gate holds the next send for the relay's stated time.
    if (!rateLimited) await sleep(pause.next());
  }
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
