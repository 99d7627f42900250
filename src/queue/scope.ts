/**
 * Scopes (docs/architecture.md §3): the unit that has at most one turn in flight and one agent
 * session. `thread` gives every thread (root id) its own scope, `channel` one per channel.
 */
import type { Event } from "nostr-tools";
import { threadRootOf } from "../nostr/events.js";

export type SessionScope = "thread" | "channel";

export interface Scope {
  /** Stable key: `<channel>` or `<channel>/<root id>`. Stored in SQLite; do not change its shape. */
  key: string;
  channel: string;
  /** Thread root for thread scopes. */
  root?: string;
}

export function scopeKey(channel: string, root?: string): string {
  return root ? `${channel}/${root}` : channel;
}

/** The scope an accepted event belongs to: a top-level mention starts its own thread scope. */
export function scopeOf(ev: Pick<Event, "id" | "tags">, channel: string, mode: SessionScope): Scope {
  if (mode === "channel") return { key: scopeKey(channel), channel };
  const root = threadRootOf(ev);
  return { key: scopeKey(channel, root), channel, root };
}

export function parseScopeKey(key: string): Scope {
  const slash = key.indexOf("/");
  if (slash < 0) return { key, channel: key };
  return { key, channel: key.slice(0, slash), root: key.slice(slash + 1) };
}
