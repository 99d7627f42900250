/**
 * "Did the relay store it after all?" An event whose `OK` was lost (a timeout, a dropped
 * connection) may still be stored. A reply stored that way must count as published, or a
 * turn would answer twice (docs/architecture.md §6, answered exactly once): the relay is
 * asked by id before anything is re-sent.
 */
import type { Event } from "nostr-tools";
import type { Filter } from "nostr-tools/filter";
import { sleep } from "../base/backoff.js";
import type { Logger } from "../base/log.js";
import type { PublishOutcome } from "./outcome.js";
import type { OutageWait } from "./outage.js";

/** The two things of the relay client this needs. */
export interface PublishAndQuery {
  publish(ev: Event, opts?: { wait?: OutageWait }): Promise<PublishOutcome>;
  query(filters: Filter[]): Promise<Event[]>;
}

/**
 * Publishes and, when the outcome is uncertain, asks the relay whether it stored the event:
 * if so the outcome is `duplicate` (a success), with the reason saying which `OK` was lost.
 * `wait` is the publish's (an outage waited out first); the question is asked once after it.
 */
export async function publishConfirmed(relay: PublishAndQuery, ev: Event, log: Logger, wait?: OutageWait): Promise<PublishOutcome> {
  const outcome = await relay.publish(ev, wait && { wait });
  if (outcome.status !== "timeout" && outcome.status !== "disconnected") return outcome;
  const stored = await relay.query([{ ids: [ev.id], limit: 1 }]).catch(() => []);
  if (!stored.some((e) => e.id === ev.id)) return outcome;
  log.info(
    { evt: "relay.publish_confirmed", event: ev.id, was: outcome.status },
    "the relay had stored the event although its OK was lost",
  );
  return {
    ...outcome,
    status: "duplicate",
    reason: `stored before the ${outcome.status === "timeout" ? "OK timed out" : "connection was lost"}`,
  };
}

/**
 * Which of `ids` the relay has. One not found yet may still be on its way (sent by a daemon
 * that died right after): when none is found, asks once more after `settleMs` (a publish
 * timeout). A failed read throws.
 */
export async function storedAmong(relay: Pick<PublishAndQuery, "query">, ids: string[], settleMs: number): Promise<string[]> {
  const ask = async () => (await relay.query([{ ids, limit: ids.length }])).map((e) => e.id).filter((id) => ids.includes(id));
  const found = await ask();
  if (found.length) return found;
  await sleep(settleMs);
  return ask();
}
