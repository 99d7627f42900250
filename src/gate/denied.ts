/**
 * Making every refusal visible (docs/architecture.md §3): one log line per drop or denial (forged
 * signatures: up to a bound per minute, then counted in one line), and for
 * respond-to denials the channel's `on_denied` answer — a 🔒 reaction, a one-line reply
 * in the thread, or nothing. The Rust bridge dropped teammates' mentions with only a
 * debug line; here the operator always sees why, and the author is told at most once per
 * hour per channel so a chatty stranger cannot make the agent spam the room.
 */
import type { Event, EventTemplate } from "nostr-tools";
import type { Logger } from "../base/log.js";
import { LogThrottle, type LogThrottleOptions } from "../base/log-throttle.js";
import { npub } from "../config/keys.js";
import { channelOf, message, reaction, replyRefFor } from "../nostr/events.js";
import { isDmLike } from "./policy.js";
import type { DropReason, Refusal } from "./decide.js";
import { BoundedMap } from "../base/bounded-map.js";

export const DENIED_REACTION = "🔒";

/** One-line explanations for `on_denied: reply`; short, and naming no one else's rights. */
const REPLY_TEXT: Partial<Record<DropReason, string>> = {
  "not-owner": "🔒 I only take requests from my owner in this channel.",
  "not-allowlisted": "🔒 I only take requests from this channel's allowlist; ask my owner to add you.",
  nobody: "🔒 I don't take requests in this channel.",
  "dm-not-owner": "🔒 I only take requests from my owner in direct messages.",
};

export interface DeniedReporterOptions {
  logger: Logger;
  /** Signs and publishes a template; failures are logged, never thrown to the gate. */
  publish(template: EventTemplate): Promise<unknown>;
  /**
   * Schnorr signature check, run only for a denial that is about to be answered: the gate
   * does not verify what the policy refuses, but a 🔒 or a reply names an author, and a
   * forged event must not make the agent speak to someone who never wrote to it. Bounded
   * by the answer's rate limit (once per author and channel per window).
   */
  verify(ev: Event): boolean;
  /** Minimum time between two reactions/replies to the same author in the same channel; default 1 h. */
  windowMs?: number;
  /** Bound on remembered (author, channel) pairs; the oldest is forgotten first. Default 10,000. */
  maxEntries?: number;
  now?: () => number;
  /**
   * Bound on `gate.denied` lines for forged signatures, which anyone who controls a relay
   * can produce by the thousand. Default 20 a minute; the rest are counted in one
   * `gate.denied_suppressed` line when the minute ends (and in /metrics).
   */
  forgedLogLimit?: LogThrottleOptions;
  /**
   * The queue's durable "once per window" (its claimOnce), beside the in-memory one: it
   * outlives a restart, and in a fleet, where every daemon hears the denied event, only the
   * daemon whose claim succeeds answers it.
   */
  claimOnce?(key: string, windowMs: number): Promise<boolean>;
}

export class DeniedReporter {
  private readonly last: BoundedMap<string, number>;
  private readonly windowMs: number;
  private readonly now: () => number;
  private readonly forgedLog: LogThrottle;
  /** Answers claimed or being claimed and not yet published: a stopping daemon waits for them (settled). */
  private readonly inFlight = new Set<Promise<void>>();
  /** The daemon is stopping: no new claim (see `close`). */
  private closing = false;

  constructor(private readonly opts: DeniedReporterOptions) {
    this.forgedLog = new LogThrottle(opts.logger, { perWindow: 20, summaryEvt: "gate.denied_suppressed", ...opts.forgedLogLimit });
    this.windowMs = opts.windowMs ?? 3_600_000;
    this.last = new BoundedMap(opts.maxEntries ?? 10_000);
    this.now = opts.now ?? Date.now;
  }

  /**
   * Logs the refusal and, when due, answers it. Returns the publish promise (or undefined
   * when nothing is published) so callers and tests can wait for it.
   */
  report(ev: Event, decision: Refusal): Promise<void> | undefined {
    let answer = this.answerFor(ev, decision);
    // Verified only now, when the denial would be answered (see `verify`).
    const forged = answer !== undefined && !this.opts.verify(ev);
    if (forged) answer = undefined;
    const reason = forged ? "bad-signature" : decision.reason;
    const line = {
      evt: "gate.denied",
      reason,
      author: npub(ev.pubkey),
      channel: decision.channel?.id ?? channelOf(ev) ?? null,
      event: ev.id,
      ...(decision.sibling ? { sibling: decision.sibling } : {}),
    };
    if (decision.level === "debug") this.opts.logger.debug(line);
    else if (reason === "bad-signature") this.forgedLog.log("info", "bad-signature", line);
    else this.opts.logger.info(line);

    if (!answer || this.closing) return undefined;
    const template = answer.template;
    const claimed = this.opts.claimOnce ? this.opts.claimOnce(`denied:${answer.key}`, this.windowMs) : Promise.resolve(true);
    const done = claimed
      .then((ok) => (ok ? this.opts.publish(template) : undefined))
      .then(
        () => undefined,
        (err: unknown) => {
          this.opts.logger.warn({ evt: "gate.denied_notify_failed", event: ev.id, err: (err as Error)?.message ?? String(err) });
        },
      );
    this.inFlight.add(done);
    void done.finally(() => this.inFlight.delete(done));
    return done;
  }

  /**
   * Resolves once every answer under way is published (or failed). In a fleet a claimed 🔒
   * is this daemon's alone to post: the others saw the claim and stay silent, so a daemon
   * that stops must not drop it between the claim and the publish.
   */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  /**
   * A stopping daemon claims no more answers: one claimed after its wait for `settled` began
   * would be published, if at all, past the stop of its relay client, and the fleet's others,
   * having lost the claim, would never post it. Refusals are still logged; the others answer.
   */
  close(): void {
    this.closing = true;
  }

  private answerFor(ev: Event, decision: Refusal): { template: EventTemplate; key: string } | undefined {
    // Only respond-to denials are answered: drops were not addressed to the agent, a bad
    // signature names an author who may not have written the event at all, and a refused
    // workflow wake is never answered (its signer is the relay, or whoever forged it).
    if (decision.action !== "deny" || decision.reason === "bad-signature" || decision.reason.startsWith("workflow-")) return undefined;
    const channel = decision.channel;
    const mode = decision.policy?.on_denied ?? "silent";
    if (!channel || mode === "silent") return undefined;
    // Not in DMs: clients p-tag every participant there, so members talking to each other
    // would collect locks and replies meant for nobody.
    if (isDmLike(channel.type)) return undefined;
    const key = `${ev.pubkey}:${channel.id}`;
    if (!this.due(key)) return undefined;
    if (mode === "react") return { template: reaction(ev, DENIED_REACTION, channel.id), key };
    const text = REPLY_TEXT[decision.reason] ?? "🔒 I can't take this request here.";
    return { template: message(channel.id, text, { thread: replyRefFor(ev) }), key };
  }

  /** Once per window per key; the map stays bounded by evicting the oldest entry. */
  private due(key: string): boolean {
    const now = this.now();
    const at = this.last.get(key);
    if (at !== undefined && now - at < this.windowMs) return false;
    this.last.set(key, now);
    return true;
  }
}
