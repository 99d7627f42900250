/**
 * relay → gate → queue: the first steps of a mention (docs/architecture.md §3), for every
 * event the relay delivers, and the mid-turn join of an accepted event whose scope has a
 * turn running. An event is decided and, when accepted, queued in the tick it arrives, so
 * the next event (an edit, a deletion) finds it.
 *
 * Back-pressure: when the state store cannot be written (a full disk, a file locked by
 * someone else, the fleet's database away), intake pauses instead of dropping what it
 * cannot store. Every event from then on waits in memory, in arrival order, undecided (so
 * the relay cursor stays before them, and a restart meanwhile has the relay send them
 * again); `/readyz` says so; the first waiting event is tried again with a growing pause,
 * and once it can be stored the rest follow and intake resumes.
 */
import type { Event } from "nostr-tools";
import type { Logger } from "../base/log.js";
import { Backoff } from "../base/backoff.js";
import { npub } from "../config/keys.js";
import { channelOf, threadRootOf } from "../nostr/events.js";
import { FORUM_KINDS, KIND } from "../nostr/kinds.js";
import type { ActiveConversations } from "../gate/participation.js";
import type { Decision, Gate } from "../gate/index.js";
import { ownerCommandOf } from "../gate/decide.js";
import { storeUnavailable, type StoreUnavailable } from "../queue/errors.js";
import type { Scheduler } from "../queue/scheduler.js";
import type { SqliteStore } from "../queue/sqlite-store.js";
import type { Amendments } from "./amend.js";
import type { TurnDispatcher } from "../turn/dispatch.js";
import { joinMidTurn } from "./mid-turn-join.js";

export interface IntakeOptions {
  gate: Pick<Gate, "decide" | "recheck" | "act">;
  scheduler: Pick<Scheduler, "accept" | "scopeOf" | "runningTurn" | "joinRunning">;
  dispatcher: Pick<TurnDispatcher, "canTake" | "take">;
  amendments: Pick<Amendments, "edit" | "delete">;
  /** Answers to the agents' waiting questions (turn/questions.ts) are taken there, never queued as mentions. */
  questions?: { offer(ev: Event, o: { timeoutMs?: number }): boolean };
  /** `questions.timeout`, for how long another daemon may wait on a question. */
  questionTimeout?: () => number;
  /** The conversations the agent is in (gate/participation.ts): marked by its mentions and its own messages. */
  active?: Pick<ActiveConversations, "mark"> & Partial<Pick<ActiveConversations, "isThreadActive">>;
  /** The agent's own pubkey. */
  self?: string;
  /** This daemon's own state: its resubscribe cursor, and the events its gate accepted. */
  local: Pick<SqliteStore, "noteSeen" | "markAccepted">;
  owner: () => string | undefined;
  /** Set once a shutdown began: events are not decided, so the cursor stays put and a restart replays them. */
  stopping: () => boolean;
  onReceived?: (ev: Event) => void;
  onDecided?: (ev: Event, decision: Decision) => void;
  logger: Logger;
}

/** The label a gate decision is counted under (`buzz_bridge_gate_decisions_total`). */
export function decisionLabel(d: Decision): string {
  switch (d.action) {
    case "drop":
    case "deny":
      return d.reason;
    case "control":
      return d.command;
    case "amend":
      return d.amend;
    case "accept":
      return d.workflowOwner ? "workflow" : d.continued ? "continued" : d.sibling ? "sibling" : "accepted";
  }
}

/** Events held while paused, at most: as many as the queue's total cap holds. */
const MAX_HELD = 10_000;

interface Paused {
  reason: StoreUnavailable;
  since: number;
  /** Arrival order; the first is the one tried again. */
  held: Event[];
  retry: Backoff;
  timer?: NodeJS.Timeout;
  draining: boolean;
}

export class Intake {
  /** Accepts still being written to the queue, by event id: an amendment of one waits for it. */
  private readonly accepting = new Map<string, Promise<boolean>>();
  private paused?: Paused;
  /** Events whose decision was counted (onDecided): a retry after a pause does not count it twice. */
  private readonly counted = new WeakSet<Event>();

  constructor(private readonly o: IntakeOptions) {}

  /** Why intake is paused (the state store cannot be written), for `/readyz`; undefined while it takes events. */
  get pausedFor(): StoreUnavailable | undefined {
    return this.paused?.reason;
  }

  async handle(ev: Event): Promise<void> {
    const o = this.o;
    if (o.stopping()) return;
    o.onReceived?.(ev);
    if (this.paused) return this.hold(ev);
    await this.process(ev);
  }

  /** Stops trying the held events; they were never decided, so the relay sends them again after a restart. */
  close(): void {
    const p = this.paused;
    if (!p) return;
    if (p.timer) clearTimeout(p.timer);
    p.timer = undefined;
    if (p.held.length)
      this.o.logger.info(
        { evt: "intake.unhandled", reason: "stopping", count: p.held.length },
        "stopped while the state store could not be written: these events were not handled; the relay sends them again after the restart",
      );
  }

  /** Decides and handles one event; false when the state store could not take it (it is held, intake paused). */
  private async process(ev: Event): Promise<boolean> {
    const o = this.o;
    try {
      // The owner's command comes before anything else reads the event: `!cancel` typed as
      // the reply to the agent's question stops the turn, it is not the answer "!cancel".
      if (!this.ownerCommand(ev) && o.questions?.offer(ev, { timeoutMs: o.questionTimeout?.() })) {
        const channel = channelOf(ev);
        if (channel) o.local.noteSeen(channel, ev.created_at);
        return true;
      }
      // Decided in the tick the event arrives; only a possible sibling's decision waits for a
      // look-up. The decision's other effects (answers, control commands) may take time.
      const first = o.gate.decide(ev);
      const recheck = o.gate.recheck(ev, first);
      const decision = recheck ? await recheck : first;
      this.noteActivity(ev, decision);
      const acted = o.gate.act(ev, decision);
      // An event tried again while intake was paused is decided again, but counted once.
      if (!this.counted.has(ev)) {
        this.counted.add(ev);
        o.onDecided?.(ev, decision);
      }
      if (decision.action === "accept") await this.accept(ev, decision);
      else if (decision.action === "amend") {
        const amend = () =>
          decision.amend === "edit"
            ? o.amendments.edit(ev, decision.targets[0]!, decision.channel.id, decision.policy.mid_turn)
            : o.amendments.delete(ev, decision.targets);
        // Decided, not queued as an event of its own: the cursor moves past it (first, so an
        // amendment never runs for an event whose cursor could not be written).
        o.local.noteSeen(decision.channel.id, ev.created_at);
        const pending = decision.targets.flatMap((t) => this.accepting.get(t) ?? []);
        const amended = pending.length ? Promise.allSettled(pending).then(amend) : amend();
        void amended.catch((err) =>
          o.logger.error(
            { evt: "intake.error", event: ev.id, err: String(err) },
            `could not handle ${decision.amend === "edit" ? "an edit" : "a deletion"}`,
          ),
        );
      }
      await acted;
      return true;
    } catch (err) {
      const reason = storeUnavailable(err);
      if (!reason) {
        o.logger.error({ evt: "intake.error", event: ev.id, err: String(err) }, "could not handle an event");
        return true;
      }
      this.pause(ev, reason, err);
      return false;
    }
  }

  private ownerCommand(ev: Event): boolean {
    const o = this.o;
    if (o.self === undefined) return false;
    const active = o.active;
    const channel = channelOf(ev);
    const inThread = active?.isThreadActive && channel ? (root: string) => active.isThreadActive!(root, channel) : undefined;
    return ownerCommandOf(ev, o.self, o.owner(), inThread) !== undefined;
  }

  /** The state store cannot be written: from now on events wait (this one first, unless it is already waiting). */
  private pause(ev: Event, reason: StoreUnavailable, err: unknown): void {
    const p = this.paused;
    if (p) {
      // The event being tried again is held already; one that was on its way when intake paused waits too.
      if (!(p.draining && p.held[0] === ev)) this.hold(ev);
      return;
    }
    this.paused = { reason, since: Date.now(), held: [ev], retry: new Backoff({ baseMs: 500, capMs: 10_000, jitter: 0 }), draining: false };
    this.o.logger.warn(
      { evt: "intake.paused", reason, event: ev.id, err: err instanceof Error ? err.message : String(err) },
      `the state store cannot be written (${reason}): not taking events until it can; they wait, and nothing accepted is lost`,
    );
    this.tryAgain();
  }

  private hold(ev: Event): void {
    const p = this.paused!;
    if (p.held.length < MAX_HELD) {
      p.held.push(ev);
      return;
    }
    this.o.logger.info(
      { evt: "intake.unhandled", reason: "too-many-waiting", event: ev.id },
      "the state store has not taken events for long: this one is not handled (a restart has the relay send it again while the cursor is before it)",
    );
  }

  private tryAgain(): void {
    const p = this.paused!;
    if (this.o.stopping()) return;
    p.timer = setTimeout(() => void this.drain(), p.retry.next());
    p.timer.unref();
  }

  /** The held events, oldest first; the first that still cannot be stored keeps intake paused. */
  private async drain(): Promise<void> {
    const p = this.paused;
    if (!p || this.o.stopping()) return;
    p.timer = undefined;
    p.draining = true;
    while (p.held.length) {
      if (this.o.stopping()) return;
      if (!(await this.process(p.held[0]!))) {
        p.draining = false;
        return this.tryAgain();
      }
      p.held.shift();
    }
    this.paused = undefined;
    this.o.logger.info(
      { evt: "intake.resumed", reason: p.reason, paused_ms: Date.now() - p.since },
      "the state store takes writes again: intake resumed",
    );
  }

  private async accept(ev: Event, decision: Extract<Decision, { action: "accept" }>): Promise<void> {
    const o = this.o;
    const channel = decision.channel.id;
    // Noted as handled in this tick, so an edit or deletion right behind it is an amendment,
    // which waits for this write before it reads the queue.
    o.local.markAccepted(ev.id);
    const accepting = o.scheduler.accept(ev, channel);
    this.accepting.set(ev.id, accepting);
    const settled = () => this.accepting.delete(ev.id);
    void accepting.then(settled, settled);
    const fresh = await accepting;
    // Only once the queue has it: a crash before this replays the event from the relay.
    o.local.noteSeen(channel, ev.created_at);
    if (fresh && decision.continued)
      o.logger.info(
        { evt: "gate.continued", reason: decision.continued, event: ev.id, channel, author: npub(ev.pubkey) },
        decision.continued === "thread"
          ? "a reply in a thread the agent is in: taken as addressed to it"
          : "a message in a channel the agent is active in: taken as addressed to it",
      );
    else if (fresh)
      o.logger.info(
        {
          evt: "gate.accepted",
          event: ev.id,
          channel,
          author: npub(ev.pubkey),
          ...(decision.sibling ? { sibling: decision.sibling } : {}),
        },
        decision.sibling ? "mention accepted from a sibling agent" : "mention accepted",
      );
    // Also for an event the queue had (a replay, or in a fleet another daemon stored it
    // first): the daemon running the scope's turn may be this one, and only a waiting
    // event joins, once.
    joinMidTurn(o, ev, o.scheduler.scopeOf(ev, channel).key, decision.policy.mid_turn);
  }

  /**
   * Participation's record of the conversations the agent is in: a message it acts on (a
   * mention, or one that continues a conversation), and a message of its own (its replies,
   * from this daemon or another of the fleet), mark the thread and its channel active.
   */
  private noteActivity(ev: Event, decision: Decision): void {
    const active = this.o.active;
    if (!active) return;
    if (ev.kind !== KIND.message && !FORUM_KINDS.includes(ev.kind)) return;
    if (decision.action !== "accept" && ev.pubkey !== this.o.self) return;
    active.mark(threadRootOf(ev), channelOf(ev));
  }
}
