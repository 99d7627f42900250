/**
 * The one retry loop: try, and on a failure that may pass, pause (base/backoff.ts) and try
 * again, until a try succeeds or the limits say stop. Every caller that waits something
 * out (a relay outage, a state store that is away, a relay that comes up after the daemon)
 * states its limits here instead of writing its own loop:
 *
 *   const rows = await retry(() => store.read(), {
 *     backoff: { baseMs: 250, capMs: 5000, jitter: 0 },
 *     deadline: Date.now() + 60_000,
 *     retryable: (err) => !(err instanceof RefusedError),
 *     onRetry: (attempt, err, delayMs) => log.warn({ evt: "x.retry", attempt, retry_ms: delayMs }),
 *   });
 *
 * When the limits stop it, the last failure is what the call gives: its error thrown as
 * it was, or (with `again`) its last result returned.
 */
import { Backoff, type BackoffOptions, sleep } from "./backoff.js";

export interface RetryOptions<T> {
  /**
   * The pauses between tries: a Backoff (shared with other code), or its options. Default
   * Backoff's own (1 s doubling to 60 s, ±20 %), the pacing of a reconnect.
   */
  backoff?: Backoff | BackoffOptions;
  /**
   * Tries in all, the first one included. Default unlimited: most waits are bounded by
   * their `deadline` or `signal`, or by `retryable` saying no.
   */
  attempts?: number;
  /**
   * Epoch ms: no retry is made whose pause would end after it (the failure is given at
   * once instead of after a pause that cannot help). Default none.
   */
  deadline?: number;
  /**
   * Aborting it retries no more: the pause under way ends at once and the last failure is
   * given. Default none. A try under way is not interrupted: pass the signal to it as well.
   */
  signal?: AbortSignal;
  /**
   * Whether a thrown error may pass with time (`attempt`: the try that threw, 1 = the
   * first); false throws it at once. Default true: the caller's limits end the wait.
   */
  retryable?(err: unknown, attempt: number): boolean;
  /**
   * For operations that report failure in their result instead of throwing (a relay's
   * publish outcome): true tries again like a retryable failure, and when the limits stop
   * it that result is returned. Default false: every result is final.
   */
  again?(result: T, attempt: number): boolean;
  /**
   * The pause after this failure instead of the backoff's next (a relay's `retry in Ns`,
   * 0 for a try that can go at once); undefined: the backoff's. Default the backoff's.
   */
  delayMs?(failure: unknown, attempt: number): number | undefined;
  /**
   * Told of each retry before its pause: the try that failed (1 = the first), its error
   * or result, and the pause. Default nothing: each caller logs its own line.
   */
  onRetry?(attempt: number, failure: unknown, delayMs: number): void;
}

/** Runs `operation` (given its try number, 1 = the first) until it succeeds or the options say stop. */
export async function retry<T>(operation: (attempt: number) => Promise<T>, o: RetryOptions<T> = {}): Promise<T> {
  const backoff = o.backoff instanceof Backoff ? o.backoff : new Backoff(o.backoff);
  const attempts = o.attempts ?? Number.POSITIVE_INFINITY;
  for (let attempt = 1; ; attempt++) {
    let failure: { err: unknown } | { result: T };
    try {
      const result = await operation(attempt);
      if (!o.again?.(result, attempt)) return result;
      failure = { result };
    } catch (err) {
      if (o.retryable && !o.retryable(err, attempt)) throw err;
      failure = { err };
    }
    const given = (): T => {
      if ("err" in failure) throw failure.err;
      return failure.result;
    };
    const why = "err" in failure ? failure.err : failure.result;
    if (attempt >= attempts || o.signal?.aborted) return given();
    const delay = o.delayMs?.(why, attempt) ?? backoff.next();
    if (o.deadline !== undefined && Date.now() + delay > o.deadline) return given();
    o.onRetry?.(attempt, why, delay);
    if (delay > 0) await sleep(delay, o.signal);
    if (o.signal?.aborted) return given();
  }
}
