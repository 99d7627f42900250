/**
 * Reconnect and retry pacing: jittered exponential backoff, and the relay's
 * `retry in Ns` hints (docs/protocol.md §5 "Pacing", §6).
 */

export interface BackoffOptions {
  /** First delay in ms. Default 1000: quick recovery from a blip without hammering. */
  baseMs?: number;
  /** Largest delay in ms. Default 60000: a relay down for hours is still retried every minute. */
  capMs?: number;
  /** ± fraction of random spread. Default 0.2, so many bridges don't reconnect in lockstep. */
  jitter?: number;
  /** Growth per attempt. Default 2 (doubling); the queue's retries jump from base to cap. */
  factor?: number;
}

export class Backoff {
  private attempt = 0;
  private readonly baseMs: number;
  private readonly capMs: number;
  private readonly jitter: number;
  private readonly factor: number;

  constructor(opts: BackoffOptions = {}) {
    this.baseMs = opts.baseMs ?? 1000;
    this.capMs = opts.capMs ?? 60_000;
    this.jitter = opts.jitter ?? 0.2;
    this.factor = opts.factor ?? 2;
  }

  /** The next delay; each call multiplies the nominal delay by the factor, up to the cap. */
  next(): number {
    return this.delayFor(this.attempt++);
  }

  /**
   * The delay before retry number `attempt` (0 = the first): base · factor^attempt, capped,
   * with jitter. For callers that count attempts themselves (the crash breaker counts recent
   * crashes, the queue a turn's attempts).
   */
  delayFor(attempt: number): number {
    const nominal = Math.min(this.capMs, this.baseMs * this.factor ** Math.min(Math.max(0, attempt), 30));
    const spread = nominal * this.jitter * (Math.random() * 2 - 1);
    return Math.max(0, Math.round(Math.min(this.capMs, nominal + spread)));
  }

  reset(): void {
    this.attempt = 0;
  }

  get attempts(): number {
    return this.attempt;
  }
}

const RETRY_IN = /retry in\s+(\d+(?:\.\d+)?)\s*(ms|s)?/i;

/** `rate-limited: quota exceeded; retry in 7s` → 7000; undefined when no hint is present. */
export function retryAfterMs(reason: string): number | undefined {
  const m = RETRY_IN.exec(reason);
  if (!m) return undefined;
  const n = Number(m[1]);
  return m[2]?.toLowerCase() === "ms" ? n : n * 1000;
}

/** Machine-readable prefix of a relay reason (`rate-limited`, `auth-required`, `duplicate`…). */
export function reasonPrefix(reason: string): string {
  const i = reason.indexOf(":");
  return i < 0 ? "" : reason.slice(0, i).trim().toLowerCase();
}

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
