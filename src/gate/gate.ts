/**
 * The gate as the daemon calls it: decide, then make the decision visible (log line,
 * on_denied answer) or execute the control command. Accepted events are returned for
 * the caller to hand to the queue, which writes them durably before anything else.
 */
import type { Event } from "nostr-tools";
import type { Logger } from "../base/log.js";
import { decide, isWakeCandidate, siblingMayChange, type Decision, type GateContext } from "./decide.js";
import { npub } from "../config/keys.js";
import type { DeniedReporter } from "./denied.js";
import type { ControlExecutor } from "./control.js";
import { tagFaults } from "../nostr/refs.js";
import { isForumKind, threadRootOf } from "../nostr/events.js";
import { KIND } from "../nostr/kinds.js";
import { policyFor } from "../config/schema.js";
import { LoopGuard } from "./loop-guard.js";

export interface GateOptions {
  context: GateContext;
  reporter: DeniedReporter;
  control: ControlExecutor;
  logger: Logger;
  /**
   * Claims a control command's event id durably; false when it was already executed. A
   * `!shutdown` replayed after a restart (the relay resends since the cursor) must not
   * shut the daemon down again. In a fleet the claim is the database's, so one daemon
   * executes each command.
   */
  claimControl(eventId: string, createdAt: number): Promise<boolean>;
  /**
   * True the first time this daemon denies the event, durably: the relay replays what it
   * sent shortly before a restart (docs/protocol.md §5), and a denial already logged and
   * answered is neither logged nor answered again. Absent: every denial is reported.
   */
  firstDenial?(eventId: string): boolean;
  /**
   * Advances the channel's cursor for events that were decided but not queued (denied,
   * dropped, control), so a reconnect's `since` does not replay them. Accepted events
   * advance it when the queue stores them, never earlier: a crash in between must replay.
   */
  noteSeen?(channel: string, createdAt: number): void;
}

export class Gate {
  /** Accepted events the loop guard has judged: each is counted once, however often it is decided. */
  private readonly guarded = new WeakSet<Event>();

  constructor(private readonly opts: GateOptions) {}

  /** Decides and performs the decision's side effects; returns the decision. */
  async handle(ev: Event): Promise<Decision> {
    const first = this.decide(ev);
    const decision = (await this.recheck(ev, first)) ?? first;
    await this.act(ev, decision);
    return decision;
  }

  /**
   * The decision, synchronously: the daemon queues an accepted event in the same tick, so
   * an edit or deletion delivered right after it already finds it handled.
   */
  decide(ev: Event): Decision {
    const d = decide(ev, this.opts.context);
    return this.loopNow(ev, d) ?? d;
  }

  /**
   * The decision again after a look-up, when one can change `decision`: a refused author may
   * be another agent of the same owner (profile look-up, bounded in time, fails closed), and
   * a workflow message waits for the relay's key as read since the last reconnect, and a
   * message that may continue a conversation the agent is in waits for the set's rebuild at
   * start and for its author's profile (an agent's never continues one).
   * Undefined when no look-up can change it. The loop guard (loop-guard.ts) never makes an
   * accepted message wait: an author not yet known to be a person or an agent is looked up
   * while the message is queued, and counted once known (the next message finds it cached).
   */
  recheck(ev: Event, decision: Decision): Promise<Decision> | undefined {
    const inner = this.recheckOnce(ev, decision);
    if (inner) return inner.then((d) => this.loopLater(ev, d));
    if (this.loopApplies(ev, decision)) this.loopInBackground(ev, decision);
    return undefined;
  }

  private recheckOnce(ev: Event, decision: Decision): Promise<Decision> | undefined {
    const ctx = this.opts.context;
    if (isWakeCandidate(ev, ctx)) return ctx.workflowWake!(ev).then((wake) => this.wakeDecision(ev, decide(ev, ctx, undefined, wake)));
    // At start the conversations the agent was in are still being read from the relay: a
    // message that does not mention it waits for that before it is judged.
    const rebuilding = ctx.participation?.active.rebuilding;
    if (rebuilding && decision.action === "drop" && decision.reason === "no-mention" && decision.policy?.participation !== "off") {
      const again = () => {
        const d = this.decide(ev);
        return this.recheckOnce(ev, d) ?? d;
      };
      return rebuilding.then(again, again);
    }
    // A reply that may continue a conversation: only a person's does (participation.ts).
    if (decision.action === "drop" && decision.candidate && ctx.participation) {
      const via = decision.candidate;
      return ctx.participation
        .isAgent(ev.pubkey)
        .catch(() => undefined)
        .then((agent) =>
          decide(ev, ctx, undefined, undefined, { via, author: agent === undefined ? "unknown" : agent ? "agent" : "human" }),
        );
    }
    if (!siblingMayChange(decision, ctx)) return undefined;
    return ctx.sibling!(ev.pubkey, ev).then((s) => decide(ev, ctx, s));
  }

  /** An accepted message of a thread's conversation the loop guard has not judged yet. */
  private loopApplies(ev: Event, d: Decision): d is Extract<Decision, { action: "accept" }> {
    if (!this.opts.context.loop || d.action !== "accept" || d.workflowOwner || this.guarded.has(ev)) return false;
    return ev.kind === KIND.message || isForumKind(ev.kind);
  }

  /** Whether `author` is an agent, from what is known now: the owner is a person, a verified sibling an agent. */
  private agentNow(author: string, d: Extract<Decision, { action: "accept" }>): boolean | undefined {
    const ctx = this.opts.context;
    if (ctx.owner !== undefined && author === ctx.owner) return false;
    if (d.sibling === "verified") return true;
    return ctx.participation?.agentNow?.(author);
  }

  /** The loop guard's verdict when the author is known without a look-up; undefined: recheck asks. */
  private loopNow(ev: Event, d: Decision): Decision | undefined {
    if (!this.loopApplies(ev, d)) return undefined;
    const agent = this.agentNow(ev.pubkey, d);
    return agent === undefined ? undefined : this.loopVerdict(ev, d, agent);
  }

  /** The loop guard's verdict after looking the author up; one that cannot be found out counts as an agent. */
  private async loopLater(ev: Event, d: Decision): Promise<Decision> {
    if (!this.loopApplies(ev, d)) return d;
    const now = this.agentNow(ev.pubkey, d);
    const agent = now ?? (await this.opts.context.participation?.isAgent(ev.pubkey).catch(() => undefined));
    return this.loopVerdict(ev, d, agent ?? true);
  }

  /** Accepted already, author unknown: counted (or the streak reset) once the look-up answers. */
  private loopInBackground(ev: Event, d: Extract<Decision, { action: "accept" }>): void {
    const guard = this.opts.context.loop!;
    this.guarded.add(ev);
    const key = this.loopKey(ev, d.channel.id);
    void this.opts.context.participation
      ?.isAgent(ev.pubkey)
      .catch(() => undefined)
      .then((agent) => (agent === false ? guard.reset(key) : guard.count(key)));
  }

  private loopVerdict(ev: Event, d: Extract<Decision, { action: "accept" }>, agent: boolean): Decision {
    const guard = this.opts.context.loop!;
    this.guarded.add(ev);
    const key = this.loopKey(ev, d.channel.id);
    if (!agent) {
      guard.reset(key);
      return d;
    }
    if (guard.admit(key, { event: ev.id, channel: d.channel.id, author: ev.pubkey })) return d;
    return { action: "drop", reason: "loop-guard", level: "info", channel: d.channel, policy: d.policy };
  }

  private loopKey(ev: Event, channel: string): string {
    const root = threadRootOf(ev);
    const flat = policyFor(this.opts.context.config, channel).reply_placement === "flat";
    return LoopGuard.key(channel, root, flat && root === ev.id && !isForumKind(ev.kind));
  }

  /** A person's message in a thread where agents are being counted starts the count again, whatever the gate made of it. */
  private noteLoopReset(ev: Event, d: Decision): void {
    const ctx = this.opts.context;
    const guard = ctx.loop;
    if (!guard || d.action === "accept" || ev.pubkey === ctx.self || !d.channel) return;
    if ((d.action === "drop" || d.action === "deny") && d.reason === "loop-guard") return;
    if (ev.kind !== KIND.message && !isForumKind(ev.kind)) return;
    const key = this.loopKey(ev, d.channel.id);
    if (!guard.counting(key)) return;
    const now = ctx.owner !== undefined && ev.pubkey === ctx.owner ? false : ctx.participation?.agentNow?.(ev.pubkey);
    if (now === false) return guard.reset(key);
    if (now === undefined)
      void ctx.participation
        ?.isAgent(ev.pubkey)
        .catch(() => undefined)
        .then((agent) => {
          if (agent === false) guard.reset(key);
        });
  }

  /** A verified workflow wake is logged (and counted as `workflow` by the caller); a refused one is a `gate.denied` line. */
  private wakeDecision(ev: Event, d: Decision): Decision {
    if (d.action === "accept" && d.workflowOwner)
      this.opts.logger.info(
        { evt: "gate.workflow_wake", event: ev.id, channel: d.channel.id, owner: npub(d.workflowOwner), relay_key: ev.pubkey },
        "a workflow of the owner woke the agent (signed by the relay's NIP-11 self key)",
      );
    return d;
  }

  /**
   * The decision's side effects (cursor, control command, denial answer); for an event the
   * bridge acts on, one line naming the tag values its readers ignore.
   */
  async act(ev: Event, decision: Decision): Promise<void> {
    if (decision.action === "accept" || decision.action === "amend" || decision.action === "control")
      this.noteTagFaults(ev, decision.channel.id);
    this.noteLoopReset(ev, decision);
    if (decision.action === "accept" || decision.action === "amend") return;
    const seenIn = cursorChannel(decision);
    if (seenIn) this.opts.noteSeen?.(seenIn, ev.created_at);
    if (decision.action === "control") {
      if (!(await this.opts.claimControl(ev.id, ev.created_at))) {
        // At info: a command this daemon does not run is a dropped event, and in a fleet the
        // line says which daemon stood aside (docs/fleet.md: one outcome per fleet).
        this.opts.logger.info(
          { evt: "gate.control_replayed", event: ev.id, command: decision.command },
          "owner command already handled (by this daemon before, or another daemon of the fleet); not run again",
        );
        return;
      }
      await this.opts.control.execute(ev, decision.command, decision.channel.id);
      return;
    }
    // A forged signature is not remembered: anyone can mint those by the thousand (they are rate-limited in the log instead).
    if (decision.action === "deny" && decision.reason !== "bad-signature" && this.opts.firstDenial?.(ev.id) === false) {
      this.opts.logger.debug({ evt: "gate.denied_replayed", event: ev.id, reason: decision.reason });
      return;
    }
    await this.opts.reporter.report(ev, decision);
  }

  /**
   * Tag values of an event the bridge acts on that are not what their tag holds (an `e`
   * value that is no event id, a `p` value that is no pubkey, an unknown NIP-10 marker), and
   * mentions beyond Buzz's cap: every reader ignores them (nostr/refs.ts); this says so once.
   */
  private noteTagFaults(ev: Event, channel: string): void {
    const { faults, total, overCap } = tagFaults(ev);
    if (!total && !overCap) return;
    this.opts.logger.info(
      { evt: "gate.tags_dropped", event: ev.id, channel, author: npub(ev.pubkey), dropped: total, faults, over_mention_cap: overCap },
      "ignored tag values the bridge does not read: malformed, or mentions past the cap",
    );
  }
}

/**
 * The channel whose cursor a decided-but-not-queued event moves: only channels we listen
 * in, and never for a bad signature (its created_at is as forged as the rest of it).
 */
function cursorChannel(d: Decision): string | undefined {
  if (d.action === "control") return d.channel.id;
  if (d.action === "accept" || d.action === "amend" || d.reason === "bad-signature" || !d.policy) return undefined;
  return d.channel?.id;
}
