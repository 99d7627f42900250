/**
 * Crash accounting for the pool: respawn backoff that grows with recent crashes, and a
 * circuit breaker — `threshold` crashes within `windowMs` open it for `openMs`, during
 * which no agent is started and calls fail fast (docs/architecture.md §3: 3 in 60 s → 5 min).
 * A failure to start counts until an agent starts again: three in a row are a command
 * that cannot start, while one now and then between good starts (a sandbox that
 * sometimes fails to set up under load) must not stop every channel for five minutes.
 */
import { EventEmitter } from "node:events";
import { Backoff, sleep } from "../base/backoff.js";

export interface CircuitOptions {
  /** Crashes within the window that open the circuit; default 3. */
  threshold?: number;
  /** default 60 s */
  windowMs?: number;
  /** How long the circuit stays open; default 5 min. */
  openMs?: number;
  /** First respawn delay after a crash, doubled per recent crash; default 500 ms. */
  backoffBaseMs?: number;
  /** default 30 s */
  backoffMaxMs?: number;
}

export type CircuitState = "closed" | "open";

/** The breaker opened (until = when it closes again) or closed (until = undefined, crashes = 0). */
export interface CircuitChange {
  state: CircuitState;
  until: number | undefined;
  crashes: number;
}

/** What a CrashBreaker emits, checked by tsc on emit/on/once/off. */
export interface CrashBreakerEvents {
  change: [change: CircuitChange];
}

export class CrashBreaker extends EventEmitter<CrashBreakerEvents> {
  private recent: Array<{ at: number; start: boolean }> = [];
  private openUntil = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Earliest time the next spawn may start (backoff). */
  nextSpawnAt = 0;
  totalCrashes = 0;
  private readonly o: Required<CircuitOptions>;
  /** Without jitter: the delay is a function of the recent crash count alone. */
  private readonly respawn: Backoff;

  constructor(opts: CircuitOptions = {}) {
    super();
    this.o = { threshold: 3, windowMs: 60_000, openMs: 300_000, backoffBaseMs: 500, backoffMaxMs: 30_000, ...opts };
    this.respawn = new Backoff({ baseMs: this.o.backoffBaseMs, capMs: this.o.backoffMaxMs, jitter: 0 });
  }

  get state(): CircuitState {
    return this.openUntil > Date.now() ? "open" : "closed";
  }

  get until(): number | undefined {
    return this.state === "open" ? this.openUntil : undefined;
  }

  get recentCrashes(): number {
    const now = Date.now();
    this.recent = this.recent.filter((c) => now - c.at < this.o.windowMs);
    return this.recent.length;
  }

  /** Whether every failure counted now is a failure to start (no crash among them). */
  get onlyStartFailures(): boolean {
    return this.recentCrashes > 0 && this.recent.every((c) => c.start);
  }

  /** A crash, or (`start`) a failure to start. */
  record(o: { start?: boolean } = {}): void {
    const now = Date.now();
    this.totalCrashes++;
    this.recent.push({ at: now, start: o.start === true });
    const n = this.recentCrashes;
    this.nextSpawnAt = now + this.respawn.delayFor(n - 1);
    if (n >= this.o.threshold && this.state === "closed") {
      this.openUntil = now + this.o.openMs;
      this.emit("change", { state: "open", until: this.openUntil, crashes: n });
      clearTimeout(this.timer);
      this.timer = setTimeout(() => {
        this.recent = [];
        this.nextSpawnAt = 0;
        this.emit("change", { state: "closed", until: undefined, crashes: 0 });
      }, this.o.openMs);
      this.timer.unref();
    }
  }

  /** An agent started: the failures to start before it no longer count. */
  started(): void {
    this.recent = this.recent.filter((c) => !c.start);
  }

  /** Waits out the current backoff (bounded by the caller's pool staying open). */
  async backoff(): Promise<void> {
    const wait = this.nextSpawnAt - Date.now();
    if (wait > 0) await sleep(wait);
  }

  dispose(): void {
    clearTimeout(this.timer);
  }
}
