/**
 * Channel directory (docs/protocol.md §3): the channels this identity belongs to, from NIP-29
 * state over `POST /query` (39002 members `#p` self → 39000 metadata by `#d`), kept current by
 * the relay's 44100/44101 notifications. It emits `joined`/`left` so the daemon can update the
 * one channel subscription; a joined channel carries `since` = the notification's created_at
 * so the mention that came with the invitation is replayed.
 */
import { EventEmitter } from "node:events";
import type { Event } from "nostr-tools";
import type { Logger } from "../base/log.js";
import { silentLogger } from "../base/log.js";
import type { MembershipChange } from "../relay/client.js";
import { Coalescer } from "../relay/coalesce.js";
import { FORUM_KINDS, KIND } from "../nostr/kinds.js";
import { hasTag, tagValue, tagValues } from "../base/tags.js";

/** The channel types a 39000 says (docs/protocol.md §3); the dev relay's seed takes these. */
export const CHANNEL_TYPES = ["stream", "private", "dm", "forum"] as const;

/**
 * A channel's type: `t=dm` or `hidden` → dm; missing metadata → unknown. Unknown is treated
 * like a DM (fail closed, gate/policy.ts), because a DM whose metadata did not load must not
 * become an open channel.
 */
export type ChannelType = (typeof CHANNEL_TYPES)[number] | "unknown";

/** What the bridge knows of a channel: the gate, the prompt and the tools read it. */
export interface ChannelInfo {
  id: string;
  name: string;
  /** The channel description (39000 `about`). */
  about: string;
  type: ChannelType;
  archived: boolean;
  /** Member pubkeys from 39002, when known. */
  members?: string[];
  /** Members the relay's roster (39002) seats with role `bot`: agents, as Buzz Desktop sees them. */
  bots?: string[];
}

/** What the directory needs of the relay: NIP-98 `/query` and membership notifications. */
export interface DirectorySource {
  readonly pubkey: string;
  query(filters: import("nostr-tools/filter").Filter[]): Promise<Event[]>;
  on(event: "membership", fn: (c: MembershipChange) => void): unknown;
  off(event: "membership", fn: (c: MembershipChange) => void): unknown;
}

export interface DirectoryEvents {
  joined: [channel: ChannelInfo, since: number];
  left: [channelId: string];
  updated: [channel: ChannelInfo];
}

const hasBare = (ev: Event, name: string) => ev.tags.some((t) => t[0] === name && (t.length === 1 || t[1] === "" || t[1] === "true"));

/** `channel_type_from_tags`: t=dm or hidden → dm; t=private or private → private; t=forum → forum; else stream. */
export function channelTypeOf(meta: Event): Exclude<ChannelType, "unknown"> {
  const t = tagValues(meta, "t");
  if (t.includes("dm") || hasBare(meta, "hidden")) return "dm";
  if (t.includes("private") || hasBare(meta, "private")) return "private";
  if (t.includes("forum")) return "forum";
  return "stream";
}

/**
 * The kinds the bridge listens to in a channel: the policy's `kinds`, and in a forum
 * channel its posts and comments as well (docs/conversations.md "Forum channels").
 */
export function channelKinds(kinds: number[], type: ChannelType): number[] {
  return type === "forum" ? [...new Set([...kinds, ...FORUM_KINDS])] : kinds;
}

export function channelInfoOf(id: string, meta: Event | undefined, members?: Event): ChannelInfo {
  const memberList = members ? [...new Set(tagValues(members, "p"))] : undefined;
  const bots = members
    ? [...new Set(members.tags.filter((t) => t[0] === "p" && t[3] === "bot" && t[1]).map((t) => t[1]!.toLowerCase()))]
    : undefined;
  if (!meta) return { id, name: "unknown", about: "", type: "unknown", archived: false, members: memberList, ...(bots ? { bots } : {}) };
  return {
    id,
    name: tagValue(meta, "name") ?? "unknown",
    about: tagValue(meta, "about") ?? "",
    type: channelTypeOf(meta),
    archived: hasTag(meta, "archived", "true"),
    members: memberList,
    ...(bots ? { bots } : {}),
  };
}

/**
 * Newest event per `d` tag: addressable events may arrive in any order and several versions;
 * of two from one second the one with the lower id counts (NIP-01), whatever the order.
 */
function newestByD(events: Event[], kind: number): Map<string, Event> {
  const out = new Map<string, Event>();
  for (const ev of events) {
    const d = tagValue(ev, "d");
    if (ev.kind !== kind || !d) continue;
    const prev = out.get(d);
    if (!prev || ev.created_at > prev.created_at || (ev.created_at === prev.created_at && ev.id < prev.id)) out.set(d, ev);
  }
  return out;
}

export class ChannelDirectory extends EventEmitter<DirectoryEvents> {
  private channels = new Map<string, ChannelInfo>();
  private readonly log: Logger;
  private readonly onMembership = (c: MembershipChange) => void this.apply(c);
  private pendingAdds = new Map<string, MembershipChange>();
  /** Configured channels already reported as having no NIP-29 state. */
  private readonly stateless = new Set<string>();
  /** Added channels whose metadata is being looked up (taken from `pendingAdds`, not yet joined). */
  private joining = new Set<string>();
  /** Channels a discovery took in while their added notification waited: still to be announced. */
  private unannounced = new Set<string>();
  private addWaiters: (() => void)[] = [];
  /** Batches at most 250 ms apart: inside the client's 300 ms quiet time for the subscription. */
  private readonly lookups = new Coalescer(() => void this.joinPending(), { quietMs: 50, maxMs: 250 });

  constructor(
    private readonly source: DirectorySource,
    logger?: Logger,
  ) {
    super();
    this.log = logger ?? silentLogger();
  }

  /** Non-archived channels we belong to, as last discovered. */
  list(): ChannelInfo[] {
    return [...this.channels.values()];
  }

  get(id: string): ChannelInfo | undefined {
    return this.channels.get(id);
  }

  /** Full discovery; replaces the known set. Archived channels are skipped. */
  async discover(): Promise<ChannelInfo[]> {
    const memberLists = newestByD(await this.source.query([{ kinds: [KIND.groupMembers], "#p": [this.source.pubkey] }]), KIND.groupMembers);
    // A member list that no longer names us (stale version) does not count.
    const ids = [...memberLists.entries()].filter(([, ev]) => hasTag(ev, "p", this.source.pubkey)).map(([d]) => d);
    const infos = await this.fetchInfo(ids, memberLists);
    const known = this.channels;
    this.channels = new Map(infos.filter((c) => !c.archived).map((c) => [c.id, c]));
    // A channel added while this discovery ran is taken in and still announced (`joined`) by
    // its notification: known silently, a follower that had listed channels before (tail, a
    // reload's subscription) would never hear of it.
    for (const id of this.channels.keys())
      if (!known.has(id) && (this.pendingAdds.has(id) || this.joining.has(id))) this.unannounced.add(id);
    this.log.info(
      { evt: "relay.channels_discovered", count: this.channels.size, archived: infos.length - this.channels.size },
      "channels discovered",
    );
    return this.list();
  }

  /**
   * Channels the config names by id that discovery did not find: those with no NIP-29 state at
   * all (no 39000, no 39002 — a plain NIP-42 relay, or one that does not keep group state) are
   * listened in anyway, with no description and membership unknown, logged once per channel.
   * A channel that has group state without us in it stays out: we are not a member.
   */
  async adopt(ids: string[]): Promise<ChannelInfo[]> {
    const out: ChannelInfo[] = [];
    for (const info of await this.fetchInfo(ids)) {
      if (info.type !== "unknown" || info.members) continue;
      this.channels.set(info.id, info);
      out.push(info);
      if (this.stateless.has(info.id)) continue;
      this.stateless.add(info.id);
      // A relay that keeps channel state for the identity's other channels: an id it does not know is most likely wrong.
      const known = [...this.channels.values()].filter((c) => c.type !== "unknown").map((c) => `#${c.name} (${c.id})`);
      if (known.length) {
        this.log.warn(
          { evt: "relay.channel_state_unknown", channel: info.id },
          `the relay knows no channel ${info.id} (no name, no members) though it keeps state for this identity's other channels: check the UUID in the config — \`buzz-bridge doctor\` lists the identity's channels: ${known.join(", ")}; listening in it anyway`,
        );
        continue;
      }
      this.log.info(
        { evt: "relay.channel_state_unknown", channel: info.id },
        "the relay has no NIP-29 state for this configured channel: listening without a description, membership not known",
      );
    }
    return out;
  }

  /** Re-reads one channel's metadata (after a 39000 update); emits `updated`. */
  async refresh(id: string): Promise<ChannelInfo | undefined> {
    const [info] = await this.fetchInfo([id]);
    if (!info) return undefined;
    if (info.archived) {
      if (this.channels.delete(id)) this.emit("left", id);
      return info;
    }
    this.channels.set(id, info);
    this.emit("updated", info);
    return info;
  }

  /** Follows the client's 44100/44101 notifications until `detach()`. */
  attach(): this {
    this.source.on("membership", this.onMembership);
    return this;
  }

  detach(): void {
    this.lookups.cancel();
    this.source.off("membership", this.onMembership);
  }

  /**
   * Applies one membership change; never throws (a failed lookup still joins, as `unknown`).
   * Additions are looked up in batches: a burst of notifications (a replay after start, a
   * script adding the agent to 100 channels) costs one `/query`, not one per channel, which
   * keeps inside the relay's HTTP quota (docs/protocol.md, "Limits"). Resolves once applied.
   */
  apply(c: MembershipChange): Promise<void> {
    if (c.type === "removed") {
      this.pendingAdds.delete(c.channel);
      this.unannounced.delete(c.channel);
      if (this.channels.delete(c.channel)) this.log.info({ evt: "relay.channel_left", channel: c.channel }, "removed from channel");
      this.emit("left", c.channel);
      return Promise.resolve();
    }
    if (this.channels.has(c.channel)) return Promise.resolve(); // a replayed notification for a channel we know
    const prev = this.pendingAdds.get(c.channel);
    if (!prev || c.at < prev.at) this.pendingAdds.set(c.channel, c);
    return new Promise((resolve) => {
      this.addWaiters.push(resolve);
      this.lookups.touch();
    });
  }

  private async joinPending(): Promise<void> {
    const batch = [...this.pendingAdds.values()];
    const waiters = this.addWaiters;
    this.pendingAdds.clear();
    this.addWaiters = [];
    const ids = batch.map((c) => c.channel).filter((id) => !this.channels.has(id) || this.unannounced.has(id));
    for (const id of ids) this.joining.add(id);
    const infos = new Map<string, ChannelInfo>();
    try {
      for (const info of await this.fetchInfo(ids)) infos.set(info.id, info);
    } catch (err) {
      this.log.warn(
        { evt: "relay.channel_lookup_failed", channels: ids, err: (err as Error).message },
        "channel metadata lookup failed; joining anyway",
      );
    } finally {
      for (const id of ids) this.joining.delete(id);
    }
    for (const c of batch) {
      if (this.channels.has(c.channel) && !this.unannounced.delete(c.channel)) continue;
      const info = infos.get(c.channel) ?? this.channels.get(c.channel) ?? channelInfoOf(c.channel, undefined);
      if (info.archived) continue;
      // Replays arrive newest first, so an old 44100 can follow the 44101 that undid it: the
      // member list (39002) has the final word when the relay gave us one.
      if (info.members && !info.members.includes(this.source.pubkey)) continue;
      this.channels.set(info.id, info);
      this.log.info({ evt: "relay.channel_joined", channel: info.id, name: info.name }, "added to channel");
      this.emit("joined", info, c.at);
    }
    for (const w of waiters) w();
  }

  private async fetchInfo(ids: string[], memberLists?: Map<string, Event>): Promise<ChannelInfo[]> {
    if (ids.length === 0) return [];
    const kinds = memberLists ? [KIND.groupMetadata] : [KIND.groupMetadata, KIND.groupMembers];
    // A relay returns at most 2000 stored events per filter (docs/protocol.md, "Limits"): ask
    // for at most 500 channels (≤ 1000 events, with old versions to spare) per filter.
    const filters = [];
    for (let i = 0; i < ids.length; i += 500) filters.push({ kinds, "#d": ids.slice(i, i + 500) });
    const events = await this.source.query(filters);
    const metas = newestByD(events, KIND.groupMetadata);
    const members = memberLists ?? newestByD(events, KIND.groupMembers);
    return ids.map((id) => channelInfoOf(id, metas.get(id), members.get(id)));
  }
}
