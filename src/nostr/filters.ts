/**
 * The subscription filters (docs/protocol.md §5): ONE REQ for every channel, grouped so channels with the
 * same (kinds, mention requirement, since) share one filter with a `#h` list, and ONE REQ for
 * membership notifications. The relay admits ~50 frames per 5 s; one frame per channel would
 * take minutes for 500 channels.
 */
import type { Filter } from "nostr-tools/filter";
import type { Event } from "nostr-tools";
import { KIND } from "./kinds.js";
import { channelOf } from "./events.js";
import { hasTag } from "../base/tags.js";

export interface ChannelSubscription {
  /** Channel UUID (the `h` tag). */
  id: string;
  /** Kinds to receive. Default [9] (config `kinds`). Empty = every kind. */
  kinds?: number[];
  /** Only events that `p`-tag us. Default true (config `require_mention`). */
  requireMention?: boolean;
  /**
   * Replay floor (unix seconds) for this channel, e.g. the created_at of the 44100 that added
   * us, so a mention posted right after the invitation is not lost. Used until the first EOSE.
   */
  since?: number;
}

export const SUB_CHANNELS = "channels";
export const SUB_MEMBERSHIP = "membership";

/**
 * Edits (40003) and deletions (5, and NIP-29's 9005) name the event they change with an `e` tag and carry no
 * `p` tag, so the mention filters never match them: one more filter asks for them in every
 * channel we listen in, whatever its kinds and mention rule (docs/protocol.md).
 */
const AMEND_KINDS: readonly number[] = [KIND.deletion, KIND.groupDeletion, KIND.edit];

const kindsKey = (kinds: number[] | undefined) => (kinds?.length ? [...new Set(kinds)].sort((a, b) => a - b).join(",") : "*");

/** Channel filters grouped by (kinds, requireMention, since), `#h` lists sorted for stable frames. */
export function channelFilters(
  channels: Iterable<ChannelSubscription>,
  self: string,
  sinceOf: (ch: ChannelSubscription) => number | undefined,
): Filter[] {
  const groups = new Map<string, { f: Filter; ids: string[] }>();
  for (const ch of channels) {
    const since = sinceOf(ch);
    const mention = ch.requireMention ?? true;
    const key = `${kindsKey(ch.kinds)}|${mention}|${since ?? ""}`;
    let g = groups.get(key);
    if (!g) {
      const f: Filter = {};
      if (ch.kinds?.length) f.kinds = [...new Set(ch.kinds)].sort((a, b) => a - b);
      if (mention) f["#p"] = [self];
      if (since !== undefined) f.since = since;
      g = { f, ids: [] };
      groups.set(key, g);
    }
    g.ids.push(ch.id);
  }
  const filters: Filter[] = [...groups.values()].map(({ f, ids }) => ({ ...f, "#h": ids.sort() }));
  const all = filters.flatMap((f) => f["#h"]!).sort();
  if (all.length) {
    const sinces = filters.map((f) => f.since);
    const amend: Filter = { kinds: [...AMEND_KINDS], "#h": all };
    // The earliest floor of any group; a group without one means no floor at all.
    if (sinces.every((x) => x !== undefined)) amend.since = Math.min(...(sinces as number[]));
    filters.push(amend);
  }
  return filters;
}

/** 44100/44101 are p-gated: `#p` must be exactly our pubkey (docs/protocol.md §3). */
export function membershipFilter(self: string, since: number | undefined): Filter[] {
  const f: Filter = { kinds: [KIND.memberAdded, KIND.memberRemoved], "#p": [self] };
  if (since !== undefined) f.since = since;
  return [f];
}

/**
 * Did we ask for this event? The relay is not trusted to scope: the channel must be one we
 * subscribe to, the kind one we asked for there, and the mention present when required.
 * `since` is deliberately not checked: a replay sent before a filter change is still wanted.
 */
export function isRequested(ev: Event, channels: ReadonlyMap<string, ChannelSubscription>, self: string): boolean {
  const h = channelOf(ev);
  const ch = h === undefined ? undefined : channels.get(h);
  if (!ch) return false;
  if (AMEND_KINDS.includes(ev.kind)) return true;
  if (ch.kinds?.length && !ch.kinds.includes(ev.kind)) return false;
  if ((ch.requireMention ?? true) && !hasTag(ev, "p", self)) return false;
  return true;
}

export function isMembershipFor(ev: Event, self: string): boolean {
  return (ev.kind === KIND.memberAdded || ev.kind === KIND.memberRemoved) && hasTag(ev, "p", self) && channelOf(ev) !== undefined;
}
