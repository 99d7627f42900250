/**
 * Thread participation (docs/conversations.md "Thread participation"): once the agent is in
 * a conversation, people answer it without mentioning it again. A thread is *active* when
 * the agent was mentioned there or replied there, for 24 h after the last of these, at most
 * 256 threads (the least recently active forgotten first); a channel likewise, for
 * `participation: channel`. In an active thread a person's reply that mentions nobody (or
 * the agent among others) continues the conversation; a reply that mentions only someone
 * else hands the thread on and does not; nothing an agent writes ever continues one (an
 * author is an agent when its kind 0 profile carries a NIP-OA `auth` tag, siblings too, when
 * it publishes a kind 10100 directory entry, sits as `bot` in a channel's roster or is a
 * teammate), so two agents in one thread cannot keep each other going.
 *
 * The set is kept in the state store (`ActiveStore`) so a restart, or another daemon of a
 * fleet, knows it, and rebuilt from the relay at start: the mentions of and replies by the
 * agent in the last 24 h.
 */
import type { Event } from "nostr-tools";
import type { Filter } from "nostr-tools/filter";
import type { Logger } from "../base/log.js";
import { BoundedMap } from "../base/bounded-map.js";
import { channelOf, mentionsOf, threadRootOf } from "../nostr/events.js";
import { mentions } from "../nostr/refs.js";
import { FORUM_KINDS, KIND } from "../nostr/kinds.js";

export type ParticipationMode = "thread" | "channel" | "off";
/** Why a message that names no one continues the conversation. */
export type Continuation = "thread" | "channel";

/** A conversation stays active this long after its last mention of or reply by the agent. */
export const ACTIVE_TTL_MS = 24 * 3_600_000;
/** Threads (and channels) remembered at most; the least recently active go first. */
export const MAX_ACTIVE = 256;

/** Where the active set is kept across restarts and shared by a fleet (the state store). */
export interface ActiveStore {
  /** Entries active since `sinceMs` (unix ms): threads as `thread:<channel id>/<root id>`, channels as `channel:<id>`. */
  activeSince(sinceMs: number): Promise<{ key: string; at: number }[]>;
  markActive(key: string, at: number): Promise<void>;
}

/** A thread's key: the channel and the root together (a root id alone could be named from any channel). */
function threadKey(channel: string, root: string): string {
  return `${channel}/${root}`;
}

export interface ActiveConversationsOptions {
  store?: ActiveStore;
  logger?: Logger;
  now?: () => number;
}

export class ActiveConversations {
  private readonly threads = new BoundedMap<string, number>(MAX_ACTIVE);
  private readonly channels = new BoundedMap<string, number>(MAX_ACTIVE);
  private readonly now: () => number;
  /** Set while the set is being rebuilt at start: a reply that may continue a conversation waits for it. */
  rebuilding: Promise<number> | undefined;

  constructor(private readonly o: ActiveConversationsOptions = {}) {
    this.now = o.now ?? Date.now;
  }

  /** Whether `root`'s thread in `channel` is active: a root id named from another channel is no continuation. */
  isThreadActive(root: string, channel: string): boolean {
    return this.live(this.threads, threadKey(channel, root));
  }

  isChannelActive(channel: string): boolean {
    return this.live(this.channels, channel);
  }

  /** The agent was mentioned or replied in `root`'s thread (in `channel`) at `at` (unix ms; default now). */
  mark(root: string, channel: string | undefined, at = this.now()): void {
    // A thread is its channel's: without one there is no thread to continue.
    if (!channel) return;
    const key = threadKey(channel, root);
    if (this.set(this.threads, key, at)) this.persist(`thread:${key}`, at);
    if (this.set(this.channels, channel, at)) this.persist(`channel:${channel}`, at);
  }

  /** Threads active now, for the status page and tests. */
  get size(): number {
    const since = this.now() - ACTIVE_TTL_MS;
    return [...this.threads.values()].filter((at) => at >= since).length;
  }

  /**
   * At start: the store's entries, then the relay's record of the last 24 h — messages that
   * mention the agent and messages it wrote — so a set that was never stored is rebuilt.
   */
  rebuild(self: string, query: (filters: Filter[]) => Promise<Event[]>): Promise<number> {
    const done = this.load(self, query).finally(() => {
      if (this.rebuilding === done) this.rebuilding = undefined;
    });
    this.rebuilding = done;
    return done;
  }

  private async load(self: string, query: (filters: Filter[]) => Promise<Event[]>): Promise<number> {
    const since = this.now() - ACTIVE_TTL_MS;
    const entries = await this.o.store?.activeSince(since).catch((err: unknown) => {
      this.o.logger?.warn({ evt: "gate.active_load_failed", err: String(err) }, "could not read the active threads from the state store");
      return [];
    });
    for (const e of entries ?? []) {
      // `thread:<channel>/<root>`; a bare `thread:<root>` (kept by earlier versions) names no
      // channel and is left to the relay's rebuild below.
      if (e.key.startsWith("thread:") && e.key.includes("/")) this.set(this.threads, e.key.slice(7), e.at);
      else if (e.key.startsWith("channel:")) this.set(this.channels, e.key.slice(8), e.at);
    }
    const kinds = [KIND.message, ...FORUM_KINDS];
    const sinceSec = Math.floor(since / 1000);
    const found = await query([
      { kinds, "#p": [self], since: sinceSec, limit: 500 },
      { kinds, authors: [self], since: sinceSec, limit: 500 },
    ]).catch((err: unknown) => {
      this.o.logger?.warn({ evt: "gate.active_rebuild_failed", err: String(err) }, "could not read recent conversations from the relay");
      return [] as Event[];
    });
    for (const ev of found.sort((a, b) => a.created_at - b.created_at)) {
      if (ev.pubkey !== self && !mentionsOf(ev).includes(self)) continue;
      this.mark(threadRootOf(ev), channelOf(ev), ev.created_at * 1000);
    }
    return this.size;
  }

  /** True when the entry is younger than the TTL; an expired one is forgotten. */
  private live(map: Map<string, number>, key: string): boolean {
    const at = map.get(key);
    if (at === undefined) return false;
    if (at >= this.now() - ACTIVE_TTL_MS) return true;
    map.delete(key);
    return false;
  }

  /** Newer activity only (a rebuild may bring older times); true when it changed. */
  private set(map: BoundedMap<string, number>, key: string, at: number): boolean {
    const was = map.get(key);
    if (was !== undefined && was >= at) return false;
    map.set(key, at);
    return true;
  }

  private persist(key: string, at: number): void {
    this.o.store?.markActive(key, at).catch((err: unknown) => {
      this.o.logger?.warn({ evt: "gate.active_store_failed", key, err: String(err) }, "could not store an active thread");
    });
  }
}

/**
 * Whether a message that does not mention the agent continues a conversation it is in:
 * `thread` for a reply in an active thread that mentions nobody else, `channel` (with
 * `participation: channel`) for a top-level message that mentions no one in a channel the
 * agent is active in. Who wrote it (a person, not an agent) is the caller's check.
 */
export function continuationOf(
  ev: Pick<Event, "id" | "tags">,
  self: string,
  mode: ParticipationMode,
  channel: string,
  active: Pick<ActiveConversations, "isThreadActive" | "isChannelActive">,
): Continuation | undefined {
  if (mode === "off") return undefined;
  const named = mentionsOf(ev);
  // Addressed to others only: the person handed the conversation on.
  if (named.length && !mentions(ev, self)) return undefined;
  const root = threadRootOf(ev);
  if (root !== ev.id) return active.isThreadActive(root, channel) ? "thread" : undefined;
  if (mode === "channel" && named.length === 0 && active.isChannelActive(channel)) return "channel";
  return undefined;
}

/** What the relay says about an author that marks it as an agent. */
export interface AgentFacts {
  /** A NIP-OA `auth` tag in its kind 0 profile (any owner's; a sibling's too). */
  authTag?: string[];
  /** It publishes a Buzz agent directory entry (kind 10100). */
  directoryEntry?: boolean;
}

/** True when what is known of the author marks it as an agent (docs/conversations.md "Other agents"). */
export function isAgentProfile(p: AgentFacts): boolean {
  return p.authTag !== undefined || p.directoryEntry === true;
}

/**
 * Whether an author is an agent: `known` says so without asking (a `bot` seat in a channel's
 * roster, a teammate of one daemon), else its profile carries a NIP-OA `auth` tag or it
 * publishes a kind 10100 directory entry. Undefined when the profile could not be read within
 * `timeoutMs` — then the message does not continue the conversation (two agents must not keep
 * each other going).
 */
export function agentCheck(
  lookup: (pubkey: string) => Promise<AgentFacts | undefined>,
  timeoutMs = 2000,
  known: (pubkey: string) => boolean = () => false,
): (pubkey: string) => Promise<boolean | undefined> {
  return (pubkey) => {
    if (known(pubkey)) return Promise.resolve(true);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<"timeout">((r) => {
      timer = setTimeout(() => r("timeout"), timeoutMs);
      timer.unref();
    });
    return Promise.race([lookup(pubkey).catch(() => "failed" as const), timeout])
      .then((p) => (p === "timeout" || p === "failed" || p === undefined ? undefined : isAgentProfile(p)))
      .finally(() => clearTimeout(timer));
  };
}
