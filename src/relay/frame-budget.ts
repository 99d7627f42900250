/**
 * The client's own copy of the relay's frame quota (config `relay.frame_quota`; Buzz admits
 * 10 frames/s checked over a 5 s window, about 50 per 5 s, per key: every connection and
 * every HTTP bridge call of the identity draw from one bucket, and what is over is refused
 * with a `rate-limited:` answer: docs/protocol.md §7). One budget is shared by the identity's
 * sockets and its HTTP bridge, and a fleet's daemons each take their configured share of it.
 * Every outgoing frame or call takes a slot; when the window is full, they wait by priority
 * instead of being refused:
 *
 *   control  AUTH, REQ, CLOSE: the connection itself (never dropped, first in line)
 *   durable  replies, failure notices, control outcomes, everything else (never dropped)
 *   reaction 👀 ✅ ⚠️ 🔒 (kind 7): queued behind durable frames, and they leave a fifth of
 *            the window free for replies still to come
 *   signal   typing and presence: sent only while half the window is free, else dropped
 *
 * A `rate-limited` answer from the relay still pauses sending (RatePause): this budget only
 * keeps us from earning one.
 */
export type FramePriority = "control" | "durable" | "reaction" | "signal";

export interface FrameQuota {
  frames: number;
  windowMs: number;
}

/** Buzz's default: 50 frames per 5 s. */
export const BUZZ_FRAME_QUOTA: FrameQuota = { frames: 50, windowMs: 5000 };

const RANK: Record<FramePriority, number> = { control: 0, durable: 1, reaction: 2, signal: 3 };

/**
 * Frames arrive at the relay a little after we send them; counting our window this much
 * longer keeps a burst that the network compresses inside the relay's window.
 */
const WINDOW_MARGIN_MS = 250;

export class FrameBudget {
  private readonly stamps: number[] = [];
  private readonly waiters: { rank: number; seq: number; resolve: () => void }[] = [];
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  readonly metrics = { sent: 0, waited: 0, signalsDropped: 0 };

  /** `null` quota: no budget (every frame goes at once). */
  constructor(private quota: FrameQuota | null) {}

  /** The window in force (null: none). */
  get current(): FrameQuota | null {
    return this.quota;
  }

  /** A new window (the relay said it admits less); frames already counted stay counted. */
  setQuota(quota: FrameQuota | null): void {
    this.quota = quota;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!quota) for (const w of this.waiters.splice(0)) w.resolve();
    else this.schedule();
  }

  /** Frames still free in the current window. */
  free(now = Date.now()): number {
    if (!this.quota) return Number.POSITIVE_INFINITY;
    this.expire(now);
    return this.quota.frames - this.stamps.length;
  }

  /** Slots a priority must leave free for higher ones: replies can come at any moment. */
  private reserveFor(rank: number): number {
    if (!this.quota || rank <= RANK.durable) return 0;
    return rank === RANK.reaction ? Math.floor(this.quota.frames / 5) : Math.floor(this.quota.frames / 2);
  }

  /**
   * Takes a slot: at once if free (beyond what it must leave for higher priorities) and nobody
   * of higher or equal priority waits, else in turn. A `signal` never waits: it resolves false
   * (drop it) unless half the window is free.
   */
  acquire(priority: FramePriority): Promise<boolean> {
    if (!this.quota) return Promise.resolve(true);
    const rank = RANK[priority];
    if (priority === "signal") {
      if (this.waiters.length > 0 || this.free() <= this.reserveFor(rank)) {
        this.metrics.signalsDropped++;
        return Promise.resolve(false);
      }
      this.take();
      return Promise.resolve(true);
    }
    if (this.free() > this.reserveFor(rank) && !this.waiters.some((w) => w.rank <= rank)) {
      this.take();
      return Promise.resolve(true);
    }
    this.metrics.waited++;
    return new Promise((resolve) => {
      this.waiters.push({ rank, seq: this.seq++, resolve: () => resolve(true) });
      this.waiters.sort((a, b) => a.rank - b.rank || a.seq - b.seq);
      this.schedule();
    });
  }

  /** Counts a frame that could not wait (an AUTH answer must go within the relay's deadline). */
  note(): void {
    if (this.quota) this.take();
  }

  /** Releases every waiter (shutdown): what they send then is refused by a closed socket anyway. */
  stop(): void {
    clearTimeout(this.timer);
    for (const w of this.waiters.splice(0)) w.resolve();
  }

  private take(): void {
    this.stamps.push(Date.now());
    this.metrics.sent++;
  }

  private expire(now: number): void {
    const horizon = now - this.quota!.windowMs - WINDOW_MARGIN_MS;
    while (this.stamps.length > 0 && this.stamps[0]! <= horizon) this.stamps.shift();
  }

  private schedule(): void {
    if (this.timer || this.waiters.length === 0) return;
    const now = Date.now();
    while (this.waiters.length > 0 && this.free(now) > this.reserveFor(this.waiters[0]!.rank)) {
      this.take();
      this.waiters.shift()!.resolve();
    }
    if (this.waiters.length === 0) return;
    const wait = Math.max(1, this.stamps[0]! + this.quota!.windowMs + WINDOW_MARGIN_MS - now + 1);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.schedule();
    }, wait);
  }
}

/**
 * Which queue an outgoing event joins, by kind (docs/protocol.md §4): 7 reactions and 30181
 * work status (a snapshot the next one replaces) queue behind replies; 20001 presence and
 * 20002 typing are telemetry, the first to go.
 */
export function priorityOfKind(kind: number): FramePriority {
  if (kind === 7 || kind === 30181) return "reaction";
  if (kind === 20001 || kind === 20002) return "signal";
  return "durable";
}
