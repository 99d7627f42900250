/**
 * The relay's channel directory: NIP-29 groups with members and roles, and the set of
 * relay members (who may authenticate at all). Channel members are relay members
 * implicitly. The directory is the authority for access checks; the relay-signed
 * 39000/39002 events (built from it here) are how clients see it (docs/protocol.md §3).
 */
import type { Event } from "nostr-tools";
import { KIND } from "../nostr/kinds.js";
import type { ChannelType } from "./seed.js";
import { tagValue } from "../base/tags.js";
import { channelTypeOf } from "../buzz/directory.js";

export interface Channel {
  id: string;
  name: string;
  about: string;
  type: ChannelType;
  /** pubkey → role (`member`, `bot`, …), written as the 4th element of the 39002 `p` tag. */
  members: Map<string, string>;
}

export class Directory {
  readonly channels = new Map<string, Channel>();
  readonly relayMembers = new Set<string>();

  isRelayMember(pubkey: string): boolean {
    if (this.relayMembers.has(pubkey)) return true;
    for (const ch of this.channels.values()) if (ch.members.has(pubkey)) return true;
    return false;
  }

  isMember(channelId: string, pubkey: string): boolean {
    return this.channels.get(channelId)?.members.has(pubkey) ?? false;
  }

  byName(name: string): Channel | undefined {
    for (const ch of this.channels.values()) if (ch.name === name) return ch;
    return undefined;
  }

  /** Rebuilds the directory from stored relay-signed state (SQLite restart). */
  restore(metadata: Event[], memberLists: Event[]): void {
    for (const ev of metadata) {
      const id = tagValue(ev, "d");
      if (!id) continue;
      this.channels.set(id, {
        id,
        name: tagValue(ev, "name") ?? id,
        about: tagValue(ev, "about") ?? "",
        type: channelTypeOf(ev),
        members: new Map(),
      });
    }
    for (const ev of memberLists) {
      const ch = this.channels.get(tagValue(ev, "d") ?? "");
      if (!ch) continue;
      for (const t of ev.tags) if (t[0] === "p" && t[1]) ch.members.set(t[1], t[3] || "member");
    }
  }
}

/** Kind 39000 tags: `d`, `name`, `about`, `t` type, bare `private`/`hidden` as Buzz reads them. */
export function metadataTags(ch: Channel): string[][] {
  const tags = [
    ["d", ch.id],
    ["name", ch.name],
    ["about", ch.about],
    ["t", ch.type],
  ];
  if (ch.type === "private" || ch.type === "dm") tags.push(["private"]);
  if (ch.type === "dm") tags.push(["hidden"]);
  return tags;
}

/** Kind 39002 tags: `d` and one `["p", pubkey, "", role]` per member. */
export function memberTags(ch: Channel): string[][] {
  return [["d", ch.id], ...[...ch.members].map(([pk, role]) => ["p", pk, "", role])];
}

/** NIP-29 state kinds whose `d` tag names the channel they describe. */
export const GROUP_STATE_KINDS: ReadonlySet<number> = new Set([KIND.groupMetadata, KIND.groupAdmins, KIND.groupMembers, 39003]);
