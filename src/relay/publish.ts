/**
 * Publishing with bounded retries (docs/protocol.md §5): the SAME signed event is re-sent (the relay
 * de-duplicates by id, so a retry after a lost `OK` reports `duplicate`, which is success).
 * Only outcomes that can succeed later are retried; a refusal is returned with the relay's reason.
 */
import type { Event } from "nostr-tools";
import type { Logger } from "../base/log.js";
import { Backoff } from "../base/backoff.js";
import type { RelayConnection } from "./connection.js";
import { KIND } from "../nostr/kinds.js";
import { isRetryable, isSuccess, type PublishOutcome } from "./outcome.js";
import { sleep } from "../base/backoff.js";

export interface PublishOptions {
  /** Attempts in total. Default 4; typing (20002) always gets 1: a late indicator is noise. */
  attempts?: number;
  /** Wait for each `OK` this long. Default 10 s. */
  timeoutMs?: number;
  /** Wait for a (re)connection this long per attempt. Default 30 s. */
  reconnectWaitMs?: number;
  /** Pause between attempts (grows ×2). Default 500 ms. */
  retryBaseMs?: number;
}

export async function publishWithRetry(conn: RelayConnection, ev: Event, opts: PublishOptions = {}, log?: Logger): Promise<PublishOutcome> {
  const typing = ev.kind === KIND.typing;
  const attempts = typing ? 1 : Math.max(1, opts.attempts ?? 4);
  const pause = new Backoff({ baseMs: opts.retryBaseMs ?? 500, capMs: 10_000 });
  let last: PublishOutcome = { status: "disconnected", reason: "not attempted" };
  for (let i = 1; i <= attempts; i++) {
    if (!conn.authenticated && !typing) await conn.waitAuthenticated(opts.reconnectWaitMs ?? 30_000);
    last = await conn.sendEvent(ev, { timeoutMs: opts.timeoutMs, droppable: typing });
    last.attempts = i;
    if (isSuccess(last) || !isRetryable(last) || i === attempts) break;
    log?.info(
      { evt: "relay.publish_retry", event: ev.id, kind: ev.kind, status: last.status, reason: last.reason, attempt: i },
      "publish will be retried",
    );
    await sleep(pause.next());
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
    if (typing) log?.debug(line, `typing indicator not sent: ${last.reason ?? last.status}`);
    else log?.warn(line, `publish ${last.status}: ${last.reason ?? ""}`);
  }
  return last;
}
