/**
 * Runtime administration of channels and members. Every change is also published the
 * way Buzz announces it: relay-signed 39000/39002 state (addressable, newest wins) and
 * 44100/44101 notices to the member concerned (`p` = member, `h` = channel).
 */
import { randomUUID } from "node:crypto";
import { parsePubkey, parseSecretKey } from "../config/keys.js";
import { KIND } from "../nostr/kinds.js";
import { memberTags, metadataTags, type Channel } from "./channels.js";
import type { RelayCore } from "./core.js";
import { signCopy } from "./crypto.js";
import { DevRelayAdminError } from "./errors.js";
import { seedChannelId, type ChannelType, type SeedFile } from "./seed.js";
import { CHANNEL_TYPES } from "../buzz/directory.js";
import { workflowMessage } from "../nostr/workflow.js";
import type { Event } from "nostr-tools";
import { nowSec } from "../base/time.js";
import { tagValue } from "../base/tags.js";

export interface NewChannel {
  /** Channel UUID; generated when absent. */
  id?: string;
  name: string;
  about?: string;
  /** Default `stream`. */
  type?: ChannelType;
  members?: string[];
}

const RELAY_MEMBERS_META = "relay_members";

export class ChannelAdmin {
  /** Last created_at used for a channel's state events, so a newer 39002 always replaces an older one. */
  private readonly stateClock = new Map<string, number>();

  constructor(private readonly core: RelayCore) {
    const saved = core.store.getMeta(RELAY_MEMBERS_META);
    if (saved) for (const pk of JSON.parse(saved) as string[]) core.dir.relayMembers.add(pk);
    // A persistent store (--data) already holds the channels as relay-signed state.
    const all = () => true;
    const state = (kind: number) =>
      core.store.query({ kinds: [kind], authors: [core.relayPubkey] }, all, Number.MAX_SAFE_INTEGER).map((r) => r.event);
    const metadata = state(KIND.groupMetadata);
    const members = state(KIND.groupMembers);
    core.dir.restore(metadata, members);
    for (const ev of metadata) this.stateClock.set(`m:${tagValue(ev, "d")}`, ev.created_at);
    for (const ev of members) this.stateClock.set(`p:${tagValue(ev, "d")}`, ev.created_at);
  }

  addRelayMember(pk: string): void {
    const pubkey = key(pk);
    if (this.core.dir.relayMembers.has(pubkey)) return;
    this.core.dir.relayMembers.add(pubkey);
    this.core.store.setMeta(RELAY_MEMBERS_META, JSON.stringify([...this.core.dir.relayMembers]));
  }

  createChannel(c: NewChannel): string {
    if (typeof c.name !== "string" || c.name === "") throw new DevRelayAdminError("a channel needs a name");
    if (c.type !== undefined && !(CHANNEL_TYPES as readonly string[]).includes(c.type))
      throw new DevRelayAdminError(`channel type must be one of ${CHANNEL_TYPES.join(", ")}, not '${c.type}'`);
    const members = (c.members ?? []).map(key);
    const id = c.id ?? randomUUID();
    if (this.core.dir.channels.has(id)) throw new DevRelayAdminError(`channel ${id} already exists`);
    const ch: Channel = { id, name: c.name, about: c.about ?? "", type: c.type ?? "stream", members: new Map() };
    this.core.dir.channels.set(id, ch);
    this.publishMetadata(ch);
    this.publishMembers(ch);
    for (const pk of members) this.addMember(id, pk);
    return id;
  }

  /** NIP-29 edit-metadata (9002) as an admin call: a fresh relay-signed 39000. */
  updateChannel(channelId: string, c: { name?: string; about?: string }): void {
    const ch = this.channel(channelId);
    if (c.name !== undefined) {
      if (c.name === "") throw new DevRelayAdminError("a channel needs a name");
      ch.name = c.name;
    }
    if (c.about !== undefined) ch.about = c.about;
    this.publishMetadata(ch);
  }

  addMember(channelId: string, pk: string, role = "member"): void {
    const ch = this.channel(channelId);
    const pubkey = key(pk);
    const had = ch.members.get(pubkey);
    ch.members.set(pubkey, role);
    if (had === role) return;
    if (had === undefined) this.notify(KIND.memberAdded, ch, pubkey);
    this.publishMembers(ch);
  }

  removeMember(channelId: string, pk: string): void {
    const ch = this.channel(channelId);
    const pubkey = key(pk);
    if (!ch.members.delete(pubkey)) return;
    this.notify(KIND.memberRemoved, ch, pubkey);
    this.publishMembers(ch);
  }

  /**
   * A workflow's message waking `agent` on behalf of `owner` (Buzz's workflow output: a
   * relay-signed kind 9, docs/protocol.md §4). `signAs: "previous"` signs it with the key the
   * relay had before its last rotation, as a stale or leaked key would.
   */
  workflowWake(w: { channel: string; owner: string; agent: string; content?: string; signAs?: "current" | "previous" }): Event {
    const ch = this.channel(w.channel);
    const owner = key(w.owner);
    const agent = key(w.agent);
    // Buzz runs a workflow only while its owner may still post in the destination channel.
    if (!ch.members.has(owner)) throw new DevRelayAdminError(`the workflow owner ${owner} is not a member of channel ${ch.id}`);
    if (w.signAs !== undefined && w.signAs !== "current" && w.signAs !== "previous")
      throw new DevRelayAdminError(`sign_as must be current or previous, not '${String(w.signAs)}'`);
    if (w.signAs === "previous" && !this.core.hasPreviousKey) throw new DevRelayAdminError("the relay has not rotated its key yet");
    return this.core.publishAsRelay(workflowMessage(ch.id, owner, agent, w.content ?? "Workflow: please pick this up."), ch.id, w.signAs);
  }

  /** After a key rotation: every channel's state again, signed with the new key (so a restart on `--data` finds it). */
  republishState(): void {
    for (const ch of this.core.dir.channels.values()) {
      this.publishMetadata(ch);
      this.publishMembers(ch);
    }
  }

  /**
   * Applies a seed: members and their profiles, then channels. A channel already present
   * (same id, or same name when the seed gives no id — a restart on the same `--data`) is
   * kept and only gains missing members; initial messages are posted only into new channels.
   */
  applySeed(seed: SeedFile): Channel[] {
    for (const pk of seed.members) this.addRelayMember(pk);
    const now = nowSec();
    // Each start, so a renamed member's profile follows the seed (kind 0 is replaceable).
    for (const p of seed.profiles)
      this.core.accept({
        event: signCopy(
          { kind: KIND.profile, created_at: now, tags: [], content: JSON.stringify({ name: p.name, display_name: p.name }) },
          p.secretKey,
        ),
      });
    const out: Channel[] = [];
    for (const c of seed.channels) {
      const existing = c.id ? this.core.dir.channels.get(c.id) : this.core.dir.byName(c.name);
      if (existing) {
        for (const pk of c.members) if (!existing.members.has(pk)) this.addMember(existing.id, pk);
        out.push(existing);
        continue;
      }
      // No id in the seed: one derived from the name, the same on every start.
      const id = this.createChannel({ id: c.id ?? seedChannelId(c.name), name: c.name, about: c.about, type: c.type, members: c.members });
      for (const m of c.messages) {
        const sk = m.author_nsec ? parseSecretKey(m.author_nsec) : undefined;
        const tpl = { kind: KIND.message, created_at: now, tags: [["h", id]], content: m.content };
        if (sk) this.core.accept({ event: signCopy(tpl, sk), channel: id });
        else this.core.publishAsRelay(tpl, id);
      }
      out.push(this.channel(id));
    }
    return out;
  }

  private channel(id: string): Channel {
    const ch = this.core.dir.channels.get(id);
    if (!ch) throw new DevRelayAdminError(`no channel with id ${id}`);
    return ch;
  }

  private notify(kind: number, ch: Channel, pubkey: string): void {
    this.core.publishAsRelay({
      kind,
      created_at: nowSec(),
      tags: [
        ["p", pubkey],
        ["h", ch.id],
      ],
      content: "",
    });
  }

  private publishMetadata(ch: Channel): void {
    this.core.publishAsRelay({ kind: KIND.groupMetadata, created_at: this.tick(`m:${ch.id}`), tags: metadataTags(ch), content: "" });
  }

  private publishMembers(ch: Channel): void {
    this.core.publishAsRelay({ kind: KIND.groupMembers, created_at: this.tick(`p:${ch.id}`), tags: memberTags(ch), content: "" });
  }

  private tick(key: string): number {
    const last = this.stateClock.get(key) ?? 0;
    const t = Math.max(nowSec(), last + 1);
    this.stateClock.set(key, t);
    return t;
  }
}

/** npub or hex → hex, as an admin error a caller can act on. */
function key(pk: string): string {
  try {
    return parsePubkey(String(pk));
  } catch (err) {
    throw new DevRelayAdminError(`bad pubkey: ${(err as Error).message}`);
  }
}
