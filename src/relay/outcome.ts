/**
 * Typed publish outcomes (docs/protocol.md §5): what the relay's `OK` (or its silence) means, and which
 * outcomes are worth retrying with the same signed event (idempotent by id).
 */
import { reasonPrefix } from "../base/backoff.js";

export type PublishStatus = "accepted" | "duplicate" | "refused" | "timeout" | "disconnected" | "dropped";

export interface PublishOutcome {
  /**
   * accepted: stored/relayed. duplicate: the relay already had it (success for an idempotent
   * retry). refused: `OK false` with the relay's reason. timeout: no `OK` in time (it may still
   * have been stored). disconnected: no connection. dropped: not sent on purpose (typing while
   * rate-limited).
   */
  status: PublishStatus;
  /** The relay's reason text, or ours for timeout/disconnected/dropped. */
  reason?: string;
  /** Attempts made (publish with retry), not counting those refused for the relay's rate limit. */
  attempts?: number;
  /** Sends the relay refused with `rate-limited:` before this outcome (each re-sent after its pause). */
  rateLimited?: number;
}

export function outcomeFromOk(ok: boolean, reason: string): PublishOutcome {
  const prefix = reasonPrefix(reason);
  if (prefix === "duplicate") return { status: "duplicate", reason };
  if (ok) return { status: "accepted", reason: reason || undefined };
  return { status: "refused", reason };
}

export function isSuccess(o: PublishOutcome): boolean {
  return o.status === "accepted" || o.status === "duplicate";
}

/** Only outcomes that can succeed later: rate limits, auth races, silence and connection loss. */
export function isRetryable(o: PublishOutcome): boolean {
  if (o.status === "timeout" || o.status === "disconnected") return true;
  if (o.status !== "refused") return false;
  const p = reasonPrefix(o.reason ?? "");
  return p === "rate-limited" || p === "auth-required";
}
