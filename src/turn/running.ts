/**
 * The turns in flight (mentions' and heartbeats'): what `!status` and the status page show,
 * what `!cancel` and shutdown end, and what a mid-turn message may join.
 */
import type { AgentPool, AgentSession } from "../agent/index.js";
import type { MidTurnInbox } from "./mid-turn.js";

/** A running turn as the status page shows it. */
export interface RunningTurn {
  turnId: number;
  scope: string;
  channel: string;
  startedAt: number;
  /** When the agent last sent an update, and what it was. */
  lastActivityAt?: number;
  lastActivity?: string;
  /** `stop: wait` gates the turn waits on (⏳), and since when. */
  gateWait?: { gates: string[]; since: number };
}

/** One turn in flight; a heartbeat's has no mid-turn inbox (nothing is steered into it). */
export interface RunningEntry {
  scope: string;
  abort: AbortController;
  /** Settles when the turn has ended. */
  done: Promise<void>;
  info: RunningTurn;
  /** The agent session, once the turn has one. */
  session?: AgentSession;
  mid?: MidTurnInbox;
  /** The threads the turn answers in (a mid-turn message from another waits). */
  threads?: Set<string>;
}

/** How long a shutdown waits for cancelled turns to end. */
const CANCEL_WAIT_MS = 5000;

export class RunningTurns {
  private readonly running = new Map<number, RunningEntry>();

  constructor(private readonly pool: Pick<AgentPool, "cancel">) {}

  get size(): number {
    return this.running.size;
  }

  get(turnId: number): RunningEntry | undefined {
    return this.running.get(turnId);
  }

  /** Registers the turn, runs `body` with its entry, and forgets the turn when `body` ends. */
  run<T>(
    turnId: number,
    info: Omit<RunningTurn, "turnId" | "startedAt">,
    extra: Pick<RunningEntry, "mid" | "threads">,
    body: (entry: RunningEntry) => Promise<T>,
  ): Promise<T> {
    const entry: RunningEntry = {
      scope: info.scope,
      abort: new AbortController(),
      done: Promise.resolve(),
      info: { turnId, ...info, startedAt: Date.now() },
      ...extra,
    };
    this.running.set(turnId, entry);
    const result = body(entry).finally(() => this.running.delete(turnId));
    entry.done = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  /** The turns running now, with the agent's last activity and any gate wait. */
  list(): RunningTurn[] {
    return [...this.running.values()].map((r) => {
      const state = r.session?.current?.state;
      return { ...r.info, lastActivityAt: state?.lastActivityAt, lastActivity: state?.lastActivity };
    });
  }

  /** `!cancel`: ends these turns. Returns how many were running and not yet cancelled. */
  cancel(turnIds: number[]): number {
    let n = 0;
    for (const id of turnIds) {
      const r = this.running.get(id);
      if (r && !r.abort.signal.aborted) {
        r.abort.abort("owner");
        this.pool.cancel(r.scope);
        n++;
      }
    }
    return n;
  }

  /** Waits for running turns up to `graceMs`, then cancels the rest. Returns how many were cancelled. */
  async drain(graceMs: number): Promise<number> {
    const all = [...this.running.values()];
    const finished = Promise.all(all.map((r) => r.done));
    const timedOut = await Promise.race([
      finished.then(() => false),
      new Promise<boolean>((r) => setTimeout(() => r(true), graceMs).unref()),
    ]);
    if (!timedOut) return 0;
    const left = [...this.running.values()];
    for (const r of left) {
      r.abort.abort("shutdown");
      this.pool.cancel(r.scope, "shutdown");
    }
    await Promise.race([Promise.all(left.map((r) => r.done)), new Promise((r) => setTimeout(r, CANCEL_WAIT_MS).unref())]);
    return left.length;
  }
}
