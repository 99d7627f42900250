/**
 * Relays whose sockets live only moments (docs/protocol.md §1, "Connection lifetime"): a
 * lifetime shorter than SHORT_LIFE_MS is not worth replacing ahead of its end, and
 * reconnecting at once after each would spend the key's frame quota on AUTH and REQ frames
 * (a 1 s lifetime: two reconnects and four REQs a second) and fill the log. So, while the
 * client keeps a frame quota, such a socket is left to the relay to close, the next one
 * waits a growing back-off (1 s doubling to 60 s; a socket that lives longer starts it
 * again), and the log says so once a minute with a count, not per reconnect.
 *
 * Budget (over 60 s of a 1 s lifetime): at most 7 reconnects, so at most 7 AUTH and
 * 7 × (subscriptions) REQ frames — under 5 % of Buzz's 600 frames a minute for the usual
 * two subscriptions — and at most 2 info lines (`relay.short_lifetime` and its count).
 */
import type { Logger } from "../base/log.js";
import { Backoff } from "../base/backoff.js";
import { LogThrottle } from "../base/log-throttle.js";

/** A socket that lived less than this before the relay ended it had a short lifetime. */
export const SHORT_LIFE_MS = 1500;

export class ShortLives {
  private readonly backoff = new Backoff({ baseMs: 1000, capMs: 60_000, jitter: 0.1 });
  private readonly throttle: LogThrottle;
  private streak = 0;

  /** `enabled`: whether the client keeps a frame quota (without one there is nothing to save). */
  constructor(
    logger: Logger,
    private readonly enabled: () => boolean,
  ) {
    this.throttle = new LogThrottle(logger, { perWindow: 1, windowMs: 60_000, summaryEvt: "relay.short_lifetime_count" });
  }

  /** Whether a relay's stated lifetime is too short to replace sockets ahead of it. */
  tooShortToPlan(lifetimeMs: number): boolean {
    return this.enabled() && lifetimeMs < SHORT_LIFE_MS;
  }

  /** In a run of short-lived sockets: their per-socket lines go to debug. */
  get quiet(): boolean {
    return this.streak > 0;
  }

  /**
   * The relay ended a socket after `livedMs`: the wait before the next one (undefined: it
   * lived long enough, reconnect as usual).
   */
  ended(livedMs: number): number | undefined {
    if (!this.enabled() || livedMs >= SHORT_LIFE_MS) {
      this.streak = 0;
      this.backoff.reset();
      return undefined;
    }
    this.streak++;
    const wait = this.backoff.next();
    this.throttle.log(
      "info",
      "relay.short_lifetime",
      { evt: "relay.short_lifetime", lived_ms: livedMs, retry_ms: wait, in_a_row: this.streak },
      "the relay ends its connections within moments: reconnecting with a growing pause to spare the frame quota (said once a minute)",
    );
    return wait;
  }
}
