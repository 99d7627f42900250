/**
 * Keeps the client's ONE channel subscription equal to "channels we belong to that the config
 * selects" (config `channels`, `"*"` = all; docs/configuration.md): full discovery at start and on
 * reload, then 44100/44101 joins and leaves as they happen. Each change is one `setChannels`.
 */
import type { Config } from "../config/schema.js";
import { channelSelected, policyFor } from "../config/schema.js";
import type { RelayClient } from "../relay/client.js";
import { channelKinds, type ChannelDirectory, type ChannelInfo } from "./directory.js";
import type { ChannelSubscription } from "../nostr/filters.js";

/**
 * How to listen in a channel (kinds, mention rule), or undefined to stay out of it; `named`
 * lists channels chosen by id, listened in even where the relay keeps no NIP-29 state.
 */
export type ChannelSelector = ((ch: ChannelInfo) => Omit<ChannelSubscription, "id" | "since"> | undefined) & { named?: string[] };

/** The config's selection: listed (or `"*"`) channels, with their effective `kinds` and `require_mention`. */
export function configSelector(cfg: Config): ChannelSelector {
  const select: ChannelSelector = (ch) => {
    if (!channelSelected(cfg, ch.id)) return undefined;
    const p = policyFor(cfg, ch.id);
    // Participation needs the replies that do not mention the agent: the gate picks them out.
    return { kinds: channelKinds(p.kinds, ch.type), requireMention: p.require_mention && p.participation === "off" };
  };
  select.named = cfg.channels.map((c) => c.id).filter((id) => id !== "*");
  return select;
}

export class ChannelFollower {
  private subs = new Map<string, ChannelSubscription>();
  private readonly onJoined = (ch: ChannelInfo, since: number) => {
    const how = this.select(ch);
    if (!how) return;
    this.subs.set(ch.id, { id: ch.id, ...how, since });
    this.apply();
  };
  private readonly onLeft = (id: string) => {
    if (this.subs.delete(id)) this.apply();
  };

  constructor(
    private readonly client: RelayClient,
    private readonly directory: ChannelDirectory,
    private select: ChannelSelector,
  ) {
    directory.on("joined", this.onJoined);
    directory.on("left", this.onLeft);
  }

  /** Discovers channels and subscribes to the selected ones; call at start and on reload. */
  async refresh(select?: ChannelSelector): Promise<ChannelInfo[]> {
    if (select) this.select = select;
    const all = await this.directory.discover();
    const missing = (this.select.named ?? []).filter((id) => !all.some((c) => c.id === id));
    if (missing.length) await this.directory.adopt(missing);
    // The directory's list, not `all`: a channel joined while adopting is in it.
    return this.follow(this.directory.list());
  }

  /** Subscribes to the selected ones of `channels`, known already (no discovery); joins and leaves follow. */
  follow(channels: ChannelInfo[]): ChannelInfo[] {
    const next = new Map<string, ChannelSubscription>();
    for (const ch of channels) {
      const how = this.select(ch);
      // Keep a pending replay floor of a channel joined moments ago.
      if (how) next.set(ch.id, { id: ch.id, ...how, since: this.subs.get(ch.id)?.since });
    }
    this.subs = next;
    this.apply();
    return channels.filter((c) => next.has(c.id));
  }

  /** Channels currently listened in. */
  get channels(): ChannelSubscription[] {
    return [...this.subs.values()];
  }

  stop(): void {
    this.directory.off("joined", this.onJoined);
    this.directory.off("left", this.onLeft);
  }

  private apply(): void {
    this.client.setChannels(
      [...this.subs.values()].map((s) => (s.since === undefined ? { id: s.id, kinds: s.kinds, requireMention: s.requireMention } : s)),
    );
  }
}
