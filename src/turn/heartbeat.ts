/**
 * Heartbeat prompts (the Rust bridge's `BUZZ_ACP_HEARTBEAT_*`): every `heartbeat.every`
 * an idle agent is prompted with the heartbeat text in a session of its own, so it can
 * pick up work nobody mentioned it for. Mentions come first: a tick is skipped while a
 * turn runs or mentions wait in the queue, and while the previous heartbeat still runs,
 * so there is only ever one. Every tick leaves one log line — `heartbeat.fired` or
 * `heartbeat.skipped` with its reason — and one metric, because in the Rust bridge
 * heartbeats could silently stop firing and nobody could tell.
 */
import type { Logger } from "../base/log.js";

/** Why a tick did not prompt the agent; stable strings (log lines, metric labels). */
export type HeartbeatSkip = "busy" | "queued" | "heartbeat-running" | "not-listening" | "not-a-member" | "other-daemon";

export interface HeartbeatOptions {
  everyMs: number;
  channel: string;
  /** Turns in flight and mentions waiting (the dispatcher's and the scheduler's counts). */
  load(): { inFlight: number; queued: number };
  /** False before channels are known and while stopping. */
  listening(): boolean;
  /** Whether the identity is a member of `channel` (the relay directory's view). */
  member(): boolean;
  /** Runs one heartbeat turn; resolves when it has ended. */
  run(): Promise<unknown>;
  logger: Logger;
  onTick?(outcome: "fired" | "skipped", reason?: HeartbeatSkip): void;
  /**
   * Fleet mode: claims this tick's period for the fleet; false when another daemon of the
   * fleet fired in it already (the tick is skipped as other-daemon). Absent: always fire.
   */
  claimTick?(): Promise<boolean>;
}

export class Heartbeat {
  private timer?: NodeJS.Timeout;
  private current?: Promise<void>;

  constructor(private readonly o: HeartbeatOptions) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), this.o.everyMs);
    this.timer.unref();
  }

  /** Stops the timer; a heartbeat already running ends with the other turns (the dispatcher drains it). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * One tick: fire when the agent is idle, else say why not. Returns what it did, or
   * "claiming" while a fleet's claim for the tick is asked (it then fires or is skipped).
   */
  tick(): "fired" | HeartbeatSkip | "claiming" {
    const reason = this.skipReason();
    if (reason) {
      this.skip(reason);
      return reason;
    }
    if (this.o.claimTick) {
      this.current = this.o
        .claimTick()
        .then(
          (ok) => (ok ? this.fire() : this.skip("other-daemon")),
          (err: unknown) =>
            this.o.logger.warn(
              { evt: "heartbeat.claim_failed", err: err instanceof Error ? err.message : String(err) },
              "could not claim the heartbeat tick for the fleet",
            ),
        )
        .finally(() => (this.current = undefined));
      return "claiming";
    }
    this.current = this.fire().finally(() => (this.current = undefined));
    return "fired";
  }

  private skip(reason: HeartbeatSkip): void {
    this.o.logger.info({ evt: "heartbeat.skipped", reason, channel: this.o.channel }, `heartbeat skipped (${reason})`);
    this.o.onTick?.("skipped", reason);
  }

  private fire(): Promise<void> {
    this.o.logger.info({ evt: "heartbeat.fired", channel: this.o.channel }, "heartbeat: prompting the idle agent");
    this.o.onTick?.("fired");
    // The turn logs its own end (turn.end, heartbeat: true); run() does not reject.
    return this.o.run().then(
      () => undefined,
      (err: unknown) =>
        this.o.logger.warn(
          { evt: "turn.error", heartbeat: true, err: err instanceof Error ? err.message : String(err) },
          "heartbeat turn failed",
        ),
    );
  }

  private skipReason(): HeartbeatSkip | undefined {
    if (!this.o.listening()) return "not-listening";
    if (!this.o.member()) return "not-a-member";
    if (this.current) return "heartbeat-running";
    const { inFlight, queued } = this.o.load();
    if (queued > 0) return "queued";
    if (inFlight > 0) return "busy";
    return undefined;
  }
}
