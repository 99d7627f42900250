/**
 * A turn's answers, so that every mention is answered exactly once (docs/architecture.md
 * §6). What a turn publishes is recorded durably at once (the queue's reply ids). The relay
 * is the record of what people saw: a turn that ran before (a restart, a retry) asks it
 * which of its mentions were answered, so only the rest run again, and a turn that failed
 * for good posts its notice only in the threads that still have no answer.
 */
import type { Event } from "nostr-tools";
import type { Logger } from "../base/log.js";
import { tagValue } from "../base/tags.js";
import type { RelayPort } from "../relay/port.js";
import type { Batch } from "../queue/index.js";
import { answeredBy, isAnswer, reaction, replyRefFor, threadRootOf, type ReplyPlacement } from "../nostr/events.js";
import { FORUM_KINDS, KIND } from "../nostr/kinds.js";
import type { TurnPublisher } from "./ports.js";
import { failureNotice } from "./run.js";
import { EMOJI } from "./signals.js";

/** Failure notices per failed batch, one per thread, before they are merged into one. */
const MAX_NOTICE_THREADS = 10;

/**
 * What the turn replies to: its newest message, or for an edit (which carries no thread
 * tags) the message it edits (`stored`: the queue's copy), so the answer lands in that
 * message's thread.
 */
export function anchorOf(events: Event[], stored: (id: string) => Event | undefined): Event {
  const last = events[events.length - 1]!;
  if (last.kind !== KIND.edit) return last;
  const target = tagValue(last, "e");
  return (target && stored(target)) || last;
}

export interface AnswersDeps {
  self: string;
  relay: Pick<RelayPort, "query">;
  out: TurnPublisher;
  /** The queue's copy of an event (an edit's target). */
  storedEvent(id: string): Event | undefined;
  /** Records a reply of the turn, durably. */
  recordReply(turnId: number, eventId: string): void;
  /** Records a reply's id after signing and before publishing (fleet mode). */
  recordBeforePublish?(turnId: number, eventId: string): Promise<void>;
  logger: Logger;
}

/** A set that reports each new member once (to the durable store). */
class RecordedSet extends Set<string> {
  constructor(private readonly record: (id: string) => void) {
    super();
  }

  override add(id: string): this {
    if (!this.has(id)) this.record(id);
    return super.add(id);
  }
}

export class Answers {
  constructor(private readonly d: AnswersDeps) {}

  /**
   * The set of what the turn published (tool replies, fallback, notices): each id is
   * recorded durably as it is added, since a retry after a crash must know the thread was
   * already answered.
   */
  recorded(turnId: number): Set<string> {
    return new RecordedSet((id) => this.d.recordReply(turnId, id));
  }

  /** The publisher as one turn uses it: its replies' ids are recorded before they are sent, when asked to. */
  publisherFor(turnId: number): TurnPublisher {
    const record = this.d.recordBeforePublish;
    if (!record) return this.d.out;
    return {
      publish: (t, o) => this.d.out.publish(t, { ...o, beforePublish: (ev) => record(turnId, ev.id) }),
      signal: (t) => this.d.out.signal(t),
    };
  }

  /**
   * What of a batch still needs an answer. A turn that ran before may have answered some
   * of its mentions already, and not all of that is in the store: the process can die
   * between the relay's OK for a reply and the write that records it. A trigger with an
   * agent message replying to it is answered (the reply is recorded now), and only the
   * rest run again. Without the relay's answer, the store decides alone: anything recorded
   * means the turn is answered.
   */
  async unanswered(whole: Batch, log: Logger): Promise<Batch> {
    let batch = whole;
    if (whole.publishedReplyIds.length > 0 && whole.unansweredJoins.length > 0) {
      // The turn had answered, then took mid-turn messages, and the process stopped before
      // it answered those: they run now, on their own; what was published stays.
      log.info(
        { evt: "turn.resumed", replies: whole.publishedReplyIds, events: whole.unansweredJoins.map((e) => e.id) },
        "messages steered into the turn before the restart still need an answer",
      );
      batch = { ...whole, events: whole.unansweredJoins, publishedReplyIds: [] };
    }
    if (batch.attempt <= 1 && !batch.recovered && batch.publishedReplyIds.length === 0) return batch;
    const found = await this.onRelay(batch.events, log);
    if (!found) return batch.publishedReplyIds.length > 0 ? { ...batch, events: [] } : batch;
    for (const id of found.replies) this.d.recordReply(batch.turnId, id);
    if (found.answered.size === 0) return batch.publishedReplyIds.length > 0 ? { ...batch, events: [] } : batch;
    const events = batch.events.filter((e) => !found.answered.has(e.id));
    const publishedReplyIds = [...new Set([...batch.publishedReplyIds, ...found.replies])];
    if (events.length > 0)
      log.info(
        { evt: "turn.already_answered", replies: publishedReplyIds, answered: found.answered.size, remaining: events.length },
        "some of the turn's mentions were answered before; the rest run again",
      );
    return { ...batch, events, publishedReplyIds };
  }

  /**
   * The notices (and ⚠️) posted when a turn fails for good (the queue's `failed` event): one
   * in each thread of the batch that has no answer yet, under its last message, naming its
   * askers. Mentions an earlier attempt answered get nothing more. A batch from more threads
   * than MAX_NOTICE_THREADS gets one notice under its last message naming everyone instead.
   */
  async postFailure(events: Event[], error: string, channel: string, placement: ReplyPlacement = "thread"): Promise<void> {
    if (!events.length) return;
    this.markFailed(events, channel);
    const log = this.d.logger.child({ channel });
    const found = await this.onRelay(events, log);
    const open = found ? events.filter((e) => !found.answered.has(e.id)) : events;
    const threads = new Map<string, Event[]>();
    for (const e of open) threads.set(threadRootOf(e), [...(threads.get(threadRootOf(e)) ?? []), e]);
    const groups = threads.size > MAX_NOTICE_THREADS ? [open] : [...threads.values()];
    for (const group of groups) {
      if (!group.length) continue;
      const anchor = this.anchorOf(group);
      await this.d.out.publish(failureNotice(channel, replyRefFor(anchor, placement), group, error));
    }
  }

  /** ⚠️ on the (last few) mentions of a turn that ended failed for good. */
  markFailed(events: Event[], channel: string): void {
    for (const e of events.slice(-5)) this.d.out.signal(reaction(e, EMOJI.failed, channel));
  }

  /**
   * Which of `events` the agent has answered, as the relay shows it: a reply answers its
   * parent and, within that thread, every earlier event (an agent answers a thread once,
   * under its last message); a progress note answers nothing. Undefined when the relay
   * cannot be asked.
   */
  private async onRelay(events: Event[], log: Logger): Promise<{ answered: Set<string>; replies: string[] } | undefined> {
    // An edit is answered under the message it edits (the reply anchor): a reply to that counts for it.
    const ids = events.map((e) => (e.kind === KIND.edit ? this.anchorOf([e]).id : e.id));
    let found: Event[];
    try {
      // A flat answer (reply_placement: flat) names what it answers with a `q` tag instead.
      const kinds = [KIND.message, ...FORUM_KINDS];
      const wanted = [...new Set(ids)];
      found = await this.d.relay.query([
        { kinds, authors: [this.d.self], "#e": wanted, limit: 1000 },
        { kinds, authors: [this.d.self], "#q": wanted, limit: 1000 },
      ]);
    } catch (err) {
      log.warn(
        { evt: "turn.replies_unknown", err: err instanceof Error ? err.message : String(err) },
        "could not ask the relay which mentions were already answered",
      );
      return undefined;
    }
    const answered = new Set<string>();
    const replies: string[] = [];
    const seen = new Set<string>();
    for (const r of found) {
      if (seen.has(r.id)) continue;
      seen.add(r.id);
      // A progress note or a question says the agent was at work, not that it answered (docs/protocol.md §4).
      if (r.pubkey !== this.d.self || !isAnswer(r)) continue;
      const parent = answeredBy(r) ?? (threadRootOf(r) === r.id ? undefined : threadRootOf(r));
      const at = parent ? ids.lastIndexOf(parent) : -1;
      if (at < 0) continue;
      const thread = threadRootOf(this.anchorOf([events[at]!]));
      for (const e of events.slice(0, at + 1)) if (threadRootOf(this.anchorOf([e])) === thread) answered.add(e.id);
      replies.push(r.id);
    }
    return { answered, replies };
  }

  private anchorOf(events: Event[]): Event {
    return anchorOf(events, this.d.storedEvent);
  }
}
