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
    return decide(ev, this.opts.context);
  }

  /**
   * The decision again after a look-up, when one can change `decision`: a refused author may
   * be another agent of the same owner (profile look-up, bounded in time, fails closed), and
   * a workflow message waits for the relay's key as read since the last reconnect, and a
   * message that may continue a conversation the agent is in waits for the set's rebuild at
   * start and for its author's profile (an agent's never continues one).
   * Undefined when no look-up can change it.
   */
  recheck(ev: Event, decision: Decision): Promise<Decision> | undefined {
    const ctx = this.opts.context;
    if (isWakeCandidate(ev, ctx)) return ctx.workflowWake!(ev).then((wake) => this.wakeDecision(ev, decide(ev, ctx, undefined, wake)));
    // At start the conversations the agent was in are still being read from the relay: a
    // message that does not mention it waits for that before it is judged.
    const rebuilding = ctx.participation?.active.rebuilding;
    if (rebuilding && decision.action === "drop" && decision.reason === "no-mention" && decision.policy?.participation !== "off") {
      const again = () => {
        const d = this.decide(ev);
        return this.recheck(ev, d) ?? d;
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
