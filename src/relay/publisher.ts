/**
 * The daemon's one way of publishing (docs/architecture.md §3): the agent's
 * messages and reactions, the bridge's replies, notices and signals, work status, the
 * profile and directory entry, seats, the instance beacon, presence and typing all leave
 * through `Publisher`, so each is counted (`buzz_bridge_publish_total{kind,status}`) and
 * logged (`publish.done`) the same way.
 *
 * A publish is: sign → `beforePublish` (a fleet records a reply's id durably there) →
 * publish with retry (relay/publish.ts) → when the `OK` was lost, ask the relay whether it
 * stored the event (relay/confirm.ts) → count and log. Its deadline is the relay client's:
 * `relay.publish_timeout` per attempt, four attempts, a rate limit waited out for at most
 * 10 min; an agent's buzz tool call adds its turn as a `wait` (relay/outage.ts), and the
 * relay client keeps trying through an outage until that turn is over. A `once` publish (typing, presence, fire-and-forget signals) is one attempt and
 * never confirmed: the next one replaces it.
 */
import type { Event, EventTemplate, VerifiedEvent } from "nostr-tools";
import type { Logger } from "../base/log.js";
import { KIND } from "../nostr/kinds.js";
import type { RelayClient } from "./client.js";
import { publishConfirmed } from "./confirm.js";
import type { PublishOutcome, PublishStatus } from "./outcome.js";
import type { OutageWait } from "./outage.js";

export interface PublishCallOptions {
  /** Runs between signing and publishing; a throw publishes nothing. */
  beforePublish?(ev: Event): Promise<void>;
  /** One attempt, no confirmation read: a signal the next one replaces. */
  once?: boolean;
  /** Wait out a relay outage until this ends (relay/outage.ts); default none. */
  wait?: OutageWait;
}

export interface PublisherOptions {
  relay: Pick<RelayClient, "sign" | "publish" | "query">;
  logger: Logger;
  /** Every publish's outcome, by the event's kind (the daemon's metric). */
  onDone?(kind: number, status: PublishStatus): void;
}

/**
 * Kinds whose `publish.done` is a debug line: typing every few seconds of a turn, presence
 * every minute, the instance beacon every 30 s. Their failures still warn (relay/publish.ts).
 */
const ROUTINE_KINDS: ReadonlySet<number> = new Set([KIND.typing, KIND.presence, KIND.appData]);

export class Publisher {
  constructor(private readonly o: PublisherOptions) {}

  sign(t: EventTemplate): VerifiedEvent {
    return this.o.relay.sign(t);
  }

  /** Signs `t`, runs `beforePublish`, publishes; the signed event comes back with its outcome. */
  async send(t: EventTemplate, opts: PublishCallOptions = {}): Promise<{ event: VerifiedEvent; outcome: PublishOutcome }> {
    const event = this.sign(t);
    await opts.beforePublish?.(event);
    return { event, outcome: await this.publish(event, opts) };
  }

  /** Publishes an event signed already (the buzz tools sign first: a reply's id is known before it goes). */
  async publish(ev: Event, opts: Pick<PublishCallOptions, "once" | "wait"> = {}): Promise<PublishOutcome> {
    const { relay, logger } = this.o;
    const outcome = opts.once
      ? await relay.publish(ev, { attempts: 1 })
      : await publishConfirmed({ publish: (e, o) => relay.publish(e, o), query: (f) => relay.query(f) }, ev, logger, opts.wait);
    this.o.onDone?.(ev.kind, outcome.status);
    const line = {
      evt: "publish.done",
      kind: ev.kind,
      id: ev.id,
      status: outcome.status,
      ...(outcome.status === "accepted" || outcome.status === "duplicate" ? {} : { reason: outcome.reason }),
    };
    if (ROUTINE_KINDS.has(ev.kind)) logger.debug(line, `publish ${outcome.status}`);
    else logger.info(line, `publish ${outcome.status}`);
    return outcome;
  }
}
