/**
 * Keeps the agent's records for Buzz Desktop on the relay (docs/protocol.md "Buzz Desktop"):
 * its kind 0 profile and kind 10100 directory entry, both read-merged, and a `bot` seat
 * (kind 9000) in each open channel the config names by id where the agent is not yet a
 * member. Run at start, after a reload and when the agent's memberships change.
 *
 * Frames: one read for both records, then a publish only for a record that differs, so a
 * restart with nothing changed costs one frame. A refusal is logged and kept for `/status`;
 * the daemon keeps answering (the gate decides per channel, never these records).
 */
import type { Event, EventTemplate } from "nostr-tools";
import type { Filter } from "nostr-tools/filter";
import type { Logger } from "../base/log.js";
import { KIND } from "../nostr/kinds.js";
import { botSeat, mergeDirectory, mergeProfile, type DirectoryFields, type Merged } from "../nostr/agent-records.js";
import { channelSelected, policyFor, type Config } from "../config/schema.js";
import type { PublishOutcome } from "../relay/outcome.js";
import { isSuccess } from "../relay/outcome.js";
import type { ChannelInfo } from "./directory.js";

export interface RecordsRelay {
  query(filters: Filter[]): Promise<Event[]>;
  send(tpl: EventTemplate): Promise<{ event: Event; outcome: PublishOutcome }>;
}

/** The name a profile gets when neither the config nor the relay's profile gives one: the agent's id in a team, else `agent`. */
export function defaultProfileName(teamId?: string): string {
  return teamId ?? "agent";
}

/** The name the config makes Desktop show (its `display_name`, else its `name`, else the default). */
export function configuredDisplayName(cfg: Pick<Config, "identity">, teamId?: string): string {
  const p = cfg.identity.profile;
  return p?.display_name ?? p?.name ?? defaultProfileName(teamId);
}

/**
 * Whom Desktop should offer the agent to, from the channels' policies: `anyone` when some
 * channel answers anyone, else an allowlist of everyone some channel answers (the owner for
 * owner-only and allowlist channels, plus each allowlist). Channels answering nobody and
 * DMs (where Desktop never offers a relay agent) are left out of `channel_ids`.
 */
export function directoryAudience(
  cfg: Config,
  channels: Pick<ChannelInfo, "id" | "type">[],
  owner: string | undefined,
): Omit<DirectoryFields, "name"> {
  const ids: string[] = [];
  const allow = new Set<string>();
  let anyone = false;
  for (const ch of channels) {
    if (ch.type === "dm") continue;
    const p = policyFor(cfg, ch.id);
    if (p.respond_to === "nobody") continue;
    ids.push(ch.id);
    if (p.respond_to === "anyone") anyone = true;
    if (owner) allow.add(owner.toLowerCase());
    if (p.respond_to === "allowlist") for (const a of p.allow) allow.add(a.toLowerCase());
  }
  return anyone
    ? { respond_to: "anyone", respond_to_allowlist: [], channel_ids: ids }
    : { respond_to: "allowlist", respond_to_allowlist: [...allow].sort(), channel_ids: ids };
}

/** The channels the entry speaks for: those the agent is in that the config selects, and those it names by id. */
export function entryChannels(cfg: Config, joined: ChannelInfo[]): Pick<ChannelInfo, "id" | "type">[] {
  const out = new Map<string, Pick<ChannelInfo, "id" | "type">>();
  for (const ch of joined) if (channelSelected(cfg, ch.id)) out.set(ch.id, ch);
  for (const c of cfg.channels) if (c.id !== "*" && !out.has(c.id)) out.set(c.id, { id: c.id, type: "unknown" });
  return [...out.values()];
}

/** What makes the records run: the daemon's start, a config reload, or a change of the agent's channels. */
export type SyncReason = "start" | "reload" | "membership";

export interface RecordsOptions {
  relay: RecordsRelay;
  pubkey: string;
  config: () => Config;
  teamId?: string;
  authTag?: string[];
  /** Channels the agent is a member of now. */
  joined: () => ChannelInfo[];
  logger: Logger;
}

export interface RecordsStatus {
  profile?: PublishOutcome;
  directory?: PublishOutcome;
  /** Channel id → the outcome of the agent's `bot` seat there. */
  seats: Record<string, PublishOutcome>;
}

const newest = (events: Event[], kind: number, author: string): Event | undefined =>
  events.filter((e) => e.kind === kind && e.pubkey === author).sort((a, b) => b.created_at - a.created_at || (a.id < b.id ? -1 : 1))[0];

export class AgentRecords {
  readonly status: RecordsStatus = { seats: {} };
  private running?: Promise<void>;
  /** Why the next run goes, asked while one ran: its own reason, so a later membership change is not taken for the start. */
  private next?: SyncReason;
  /** Channels a seat was asked for already: one attempt per channel per process. */
  private readonly seatTried = new Set<string>();
  /** What the last run left on the relay (profile fields, audience, tag), to skip a run that would change nothing. */
  private written?: string;

  constructor(private readonly o: RecordsOptions) {}

  /** Publishes what changed; a call while one runs makes one more run after it. Never throws. */
  sync(reason: SyncReason): Promise<void> {
    if (this.running) {
      // A start asked for again stays a start (it reads and publishes whatever it finds); any other reason is checked against what was written.
      if (this.next !== "start") this.next = reason;
      return this.running;
    }
    this.running = (async () => {
      try {
        for (let r: SyncReason | undefined = reason; r; r = this.next) {
          this.next = undefined;
          await this.once(r);
        }
      } catch (err) {
        this.o.logger.warn(
          { evt: "directory.failed", err: (err as Error).message },
          "publishing the agent's records failed; still answering",
        );
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  private async once(reason: SyncReason): Promise<void> {
    const { relay, pubkey, logger: log } = this.o;
    const cfg = this.o.config();
    const directoryOn = cfg.identity.directory === "on";
    const fields = cfg.identity.profile ?? {};
    const audience = directoryAudience(cfg, entryChannels(cfg, this.o.joined()), cfg.identity.owner);
    // What this run would write: when a reload or a membership change leaves it as it was, no frame is spent.
    const wanted = JSON.stringify([fields, directoryOn && audience, this.o.authTag]);
    if (reason !== "start" && wanted === this.written && this.unseated(cfg).length === 0) return;
    const filters: Filter[] = [{ kinds: [KIND.profile], authors: [pubkey], limit: 1 }];
    if (directoryOn) filters.push({ kinds: [KIND.agentDirectory], authors: [pubkey], limit: 1 });
    let events: Event[];
    try {
      events = await relay.query(filters);
    } catch (err) {
      log.warn(
        { evt: "directory.read_failed", err: (err as Error).message },
        "could not read the agent's profile and directory entry; not publishing them now",
      );
      return;
    }
    const profile = newest(events, KIND.profile, pubkey);
    const merged = mergeProfile(profile, fields, defaultProfileName(this.o.teamId), this.o.authTag);
    let ok = await this.publish("profile", profile, merged, reason);
    if (directoryOn) {
      const entry = newest(events, KIND.agentDirectory, pubkey);
      ok = (await this.publish("directory", entry, mergeDirectory(entry, { name: merged.displayName, ...audience }), reason)) && ok;
    }
    this.written = ok ? wanted : undefined;
    await this.seat(cfg);
  }

  /** True when the relay holds what was merged (published now, or there already). */
  private async publish(what: "profile" | "directory", existing: Event | undefined, m: Merged, reason: string): Promise<boolean> {
    const log = this.o.logger;
    const noun = what === "profile" ? "profile" : "directory entry";
    if (m.problems.length)
      log.warn(
        { evt: `${what}.malformed`, problems: m.problems },
        `the ${noun} on the relay was malformed; replacing it with a well-formed merge`,
      );
    if (!m.template) return true;
    // A replaceable event of the same second may lose to the one it replaces (NIP-01: lower id wins).
    if (existing) m.template.created_at = Math.max(m.template.created_at, existing.created_at + 1);
    const { event, outcome } = await this.o.relay.send(m.template);
    this.status[what] = outcome;
    if (!isSuccess(outcome)) {
      log.warn(
        { evt: `${what}.refused`, status: outcome.status, reason: outcome.reason },
        `the relay did not take the agent's ${noun}; still answering in the channels`,
      );
      return false;
    }
    const content = JSON.parse(event.content) as Record<string, unknown>;
    const detail =
      what === "profile"
        ? { name: content.name, display_name: content.display_name, auth_tag: event.tags.some((t) => t[0] === "auth") }
        : { respond_to: content.respond_to, allowlist: content.respond_to_allowlist, channels: content.channel_ids };
    log.info({ evt: `${what}.published`, event: event.id, reason, ...detail }, `${noun} published`);
    return true;
  }

  /** Configured channels (by id) the agent is not a member of and has not tried to sit in yet. */
  private unseated(cfg: Config): string[] {
    // The directory also lists configured channels it could not read (type unknown, members unknown).
    const joined = new Set(
      this.o
        .joined()
        .filter((c) => c.members?.includes(this.o.pubkey))
        .map((c) => c.id),
    );
    return cfg.channels.map((c) => c.id).filter((id) => id !== "*" && !joined.has(id) && !this.seatTried.has(id));
  }

  /** A `bot` seat in each channel the config names by id where the agent is not a member (open channels admit it). */
  private async seat(cfg: Config): Promise<void> {
    for (const id of this.unseated(cfg)) {
      this.seatTried.add(id);
      const { outcome } = await this.o.relay.send(botSeat(id, this.o.pubkey));
      this.status.seats[id] = outcome;
      if (isSuccess(outcome))
        this.o.logger.info({ evt: "channel.seated", channel: id, role: "bot" }, "seated in the channel with role bot");
      else
        this.o.logger.warn(
          { evt: "channel.seat_refused", channel: id, reason: outcome.reason ?? outcome.status },
          "could not seat the agent with role bot in a configured channel: a member must add it with role bot (buzz-bridge doctor says how)",
        );
    }
  }
}
