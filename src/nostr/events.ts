/**
 * Builders for the events the bridge publishes (docs/protocol.md §4): channel messages with
 * NIP-10 thread markers and mentions, reactions, typing, presence and 40099 system
 * messages. They return unsigned templates; signing stays with the one holder of the key.
 */
import { splitContent } from "./split.js";
import type { EventTemplate, Event } from "nostr-tools";
import { KIND } from "./kinds.js";
import { MENTION_CAP } from "../contract/limits.js";
import { nowSec } from "../base/time.js";
import { tagValue } from "../base/tags.js";
import { isHex64, markedRef, mentionRefs } from "./refs.js";

export interface ThreadRef {
  /** Root of the thread; equal to parent for a direct reply to a top-level message. */
  root: string;
  /** The event replied to. */
  parent: string;
  /** The thread is a forum post's: replies in it are forum comments (kind 45003). */
  forum?: boolean;
  /**
   * `reply_placement: flat` (docs/conversations.md "Where replies go"): the answer to a
   * top-level message is posted top-level. It names what it answers with a NIP-18 `q` tag,
   * which Buzz clients do not thread under, so a restart still finds the message answered.
   */
  flat?: boolean;
}

/** Where a channel's answers go (`reply_placement`). */
export type ReplyPlacement = "thread" | "flat";

/**
 * NIP-10 marked `e` tags as Buzz builds them: root only when it differs from parent; a
 * flat answer carries only a quote of what it answers.
 */
function threadTags(ref: ThreadRef | undefined): string[][] {
  if (!ref) return [];
  if (ref.flat) return [["q", ref.parent]];
  if (ref.root === ref.parent) return [["e", ref.parent, "", "reply"]];
  return [
    ["e", ref.root, "", "root"],
    ["e", ref.parent, "", "reply"],
  ];
}

/**
 * The thread an event belongs to, from its own markers: its root, or itself when top-level.
 * Only well-formed ids count (refs.ts): a root marker carrying anything else is ignored, so
 * it can never become a scope key, a prompt line or a tag of a reply.
 */
export function threadRootOf(ev: Pick<Event, "id" | "tags">): string {
  return markedRef(ev, "root") ?? markedRef(ev, "reply") ?? ev.id;
}

/** The event `ev` replies to (its `reply`-marked `e` tag), when well-formed. */
export function parentOf(ev: Pick<Event, "tags">): string | undefined {
  return markedRef(ev, "reply");
}

/**
 * Where a reply to `ev` goes: same thread, parent = ev; in a forum's thread (a post or
 * comment), as a comment. With `placement: flat` the answer to a top-level channel message
 * is top-level too; a message inside a thread, and any forum message, is answered in its thread.
 */
export function replyRefFor(ev: Pick<Event, "id" | "tags"> & { kind?: number }, placement: ReplyPlacement = "thread"): ThreadRef {
  const ref: ThreadRef = { root: threadRootOf(ev), parent: ev.id };
  if (isForumKind(ev.kind)) ref.forum = true;
  else if (placement === "flat" && ref.root === ev.id) ref.flat = true;
  return ref;
}

/**
 * What an answer of the agent answers: its `reply`-marked parent, else (a flat answer) the
 * message it quotes. Undefined for a message that answers nothing.
 */
export function answeredBy(ev: Pick<Event, "tags">): string | undefined {
  return markedRef(ev, "reply") ?? quoteOf(ev);
}

/** The event a flat answer quotes (its NIP-18 `q` tag), when well-formed. */
export function quoteOf(ev: Pick<Event, "tags">): string | undefined {
  const q = ev.tags.find((t) => t[0] === "q")?.[1];
  return isHex64(q) ? q.toLowerCase() : undefined;
}

/** A forum post or comment (docs/conversations.md "Forum channels"). */
export function isForumKind(kind: number | undefined): boolean {
  return kind === KIND.forumPost || kind === KIND.forumComment;
}

/**
 * Pubkeys an event mentions: `p` tags and Buzz's `mention` tags, deduplicated, well-formed
 * ones only and at most MENTION_CAP of them (refs.ts).
 */
export function mentionsOf(ev: Pick<Event, "tags">): string[] {
  return mentionRefs(ev);
}

/** NIP-25: the event a reaction is on is named by its last `e` tag (when that is an event id). */
export function reactionTarget(ev: Pick<Event, "tags">): string | undefined {
  const last = ev.tags.filter((t) => t[0] === "e").at(-1)?.[1];
  return isHex64(last) ? last.toLowerCase() : undefined;
}

export function channelOf(ev: Pick<Event, "tags">): string | undefined {
  return tagValue(ev, "h");
}

/**
 * The mark of a progress note: a message the agent (or the bridge, while a turn waits) posts
 * while the turn goes on. It is not the answer to the mention (docs/protocol.md §4): a turn
 * that stopped after one still owes its answer, and runs again.
 */
export const PROGRESS_TAG = ["buzz", "progress"] as const;

export function isProgressNote(ev: Pick<Event, "tags">): boolean {
  return ev.tags.some((t) => t[0] === PROGRESS_TAG[0] && t[1] === PROGRESS_TAG[1]);
}

/**
 * The mark of the plain message of a question the agent asks people (docs/conversations.md):
 * it waits for their answer; like a progress note, it is not the turn's answer.
 */
export const QUESTION_TAG = ["buzz", "question"] as const;

/** False for the bridge's messages that answer nobody: progress notes and questions. */
export function isAnswer(ev: Pick<Event, "tags">): boolean {
  return !isProgressNote(ev) && !ev.tags.some((t) => t[0] === QUESTION_TAG[0] && t[1] === QUESTION_TAG[1]);
}

/**
 * A channel message: kind 9, or in a forum thread a comment (45003); `forumPost` makes a
 * top-level message a forum post (45001), for a forum channel.
 */
export function message(
  channel: string,
  content: string,
  opts: { thread?: ThreadRef; mentions?: string[]; extraTags?: string[][]; forumPost?: boolean } = {},
): EventTemplate {
  const mentions = [...new Set(opts.mentions ?? [])].slice(0, MENTION_CAP);
  return {
    kind: opts.thread?.forum ? KIND.forumComment : opts.forumPost && (!opts.thread || opts.thread.flat) ? KIND.forumPost : KIND.message,
    created_at: nowSec(),
    content,
    tags: [["h", channel], ...threadTags(opts.thread), ...mentions.map((p) => ["p", p]), ...(opts.extraTags ?? [])],
  };
}

/**
 * A message as the templates to publish in order: one, or marked parts `(i/n)` in the same
 * thread when the text is longer than the relay takes (split.ts): `maxBytes` is the relay's
 * own limit as its NIP-11 states it (Buzz's 256 KB when unknown). Never truncated.
 */
export function messageParts(
  channel: string,
  content: string,
  opts: Parameters<typeof message>[2] = {},
  maxBytes?: number,
): EventTemplate[] {
  return splitContent(content, maxBytes).map((part) => message(channel, part, opts));
}

export function reaction(target: Pick<Event, "id" | "pubkey">, emoji: string, channel?: string): EventTemplate {
  // Buzz's SDK adds no h tag to reactions; we add it when known so relays that scope by h accept it.
  const tags = [
    ["e", target.id],
    ["p", target.pubkey],
  ];
  if (channel) tags.push(["h", channel]);
  return { kind: KIND.reaction, created_at: nowSec(), content: emoji, tags };
}

export function typing(channel: string, thread?: ThreadRef): EventTemplate {
  return { kind: KIND.typing, created_at: nowSec(), content: "", tags: [["h", channel], ...threadTags(thread)] };
}

export function presence(status: "online" | "away" | "offline"): EventTemplate {
  return { kind: KIND.presence, created_at: nowSec(), content: status, tags: [] };
}

/** Owner control command outcome (docs/protocol.md §4): `{type, actor, target}` in the command's thread. */
export function systemMessage(
  channel: string,
  payload: { type: string; actor: string; target: string; [k: string]: unknown },
  thread?: ThreadRef,
): EventTemplate {
  return { kind: KIND.system, created_at: nowSec(), content: JSON.stringify(payload), tags: [["h", channel], ...threadTags(thread)] };
}
