/**
 * Who a channel answers (docs/architecture.md §3): the per-channel `respond_to` mode, the allowlist,
 * and DM hardening. Pure functions over the merged policy from `policyFor`, so the same
 * rules apply to live events and to events replayed after a restart.
 */
import { policyFor, channelSelected, type Config } from "../config/schema.js";
import type { ChannelInfo as DirectoryChannel, ChannelType } from "../buzz/directory.js";

export type { ChannelType } from "../buzz/directory.js";

/**
 * What the gate needs of a channel: the relay directory's `ChannelInfo`, of which only the id
 * and type are certain (a channel the directory does not know is `{ id, type: "unknown" }`).
 */
export type ChannelInfo = Pick<DirectoryChannel, "id" | "type"> & Partial<DirectoryChannel>;

export type ChannelPolicy = ReturnType<typeof policyFor> & {
  /**
   * True when this channel's own entry (by id, not "*") sets `respond_to` or `allow`:
   * only then does a DM answer anyone but the owner. A "*" entry is a default in effect.
   */
  opensDm: boolean;
};

/** Reasons for refusing an author; stable strings, they appear in logs and tests. */
export type AuthorDenial = "not-owner" | "not-allowlisted" | "nobody" | "dm-not-owner";

/** True for channels where only the owner is answered unless the entry says otherwise. */
export function isDmLike(type: ChannelType): boolean {
  return type === "dm" || type === "unknown";
}

/**
 * The policy that applies to `channelId`, or undefined when the config does not listen
 * there. With only a `"*"` entry, a channel the directory does not know (the identity is
 * not a member) is not configured: "*" means "every channel I am a member of".
 */
export function channelPolicy(cfg: Config, channelId: string, known: boolean): ChannelPolicy | undefined {
  if (!channelSelected(cfg, channelId)) return undefined;
  const explicitEntry = cfg.channels.some((c) => c.id === channelId);
  if (!explicitEntry && !known) return undefined;
  const opensDm = cfg.channels.some((c) => c.id === channelId && (c.respond_to !== undefined || c.allow !== undefined));
  return { ...policyFor(cfg, channelId), opensDm };
}

/**
 * Whether `author` may start a turn in this channel.
 *
 * - The owner is always allowed, except under `nobody` (a channel that answers no one;
 *   owner control commands still work there because they are decided before this).
 * - A verified sibling (another agent of the same owner) is allowed wherever the owner
 *   is, as in the Rust bridge: under owner-only, allowlist and in DMs.
 * - In DMs (and channels of unknown type) only the owner is answered unless the channel
 *   ENTRY itself (by id) sets `respond_to` or `allow`: clients p-tag every DM participant, so a
 *   permissive default would answer anyone who opens a group DM with the agent.
 */
export function authorAllowed(
  policy: Pick<ChannelPolicy, "respond_to" | "allow" | "opensDm">,
  channelType: ChannelType,
  author: string,
  owner: string | undefined,
  /** The author is a verified sibling (siblings.ts): trusted like the owner for turns, in DMs too. */
  sibling = false,
): { allowed: true; by?: "sibling" } | { allowed: false; reason: AuthorDenial } {
  if (policy.respond_to === "nobody") return { allowed: false, reason: "nobody" };
  const isOwner = owner !== undefined && author === owner;
  if (isOwner) return { allowed: true };
  if (sibling && owner !== undefined) return { allowed: true, by: "sibling" };
  if (isDmLike(channelType) && !policy.opensDm) {
    return { allowed: false, reason: "dm-not-owner" };
  }
  switch (policy.respond_to) {
    case "anyone":
      return { allowed: true };
    case "allowlist":
      return policy.allow.includes(author) ? { allowed: true } : { allowed: false, reason: "not-allowlisted" };
    default:
      return { allowed: false, reason: "not-owner" };
  }
}
