/**
 * Who can @-mention the agent from Buzz Desktop, by Desktop's own rules (docs/protocol.md
 * "Buzz Desktop") applied to the records as they stand on the relay: the channel's roster
 * (39002, the agent's role), the agent's 10100 entry, its kind 0 (the NIP-OA owner) and the
 * owner's 30177. For `doctor`'s `mentionable` line; the gate never reads this.
 */
import type { Event } from "nostr-tools";
import { KIND } from "../nostr/kinds.js";
import { tagValue } from "../base/tags.js";
import { parseAuthTag, verifyAttestation } from "../config/nip-oa.js";
import { parseObject } from "../nostr/agent-records.js";
import { verifySignature } from "../nostr/verify.js";

export interface DesktopAgent {
  /** Where Desktop takes the audience from: the owner's trusted 30177, the 10100, or nowhere. */
  source: "30177" | "10100" | "none";
  /** Known to Desktop only through a trusted 30177. */
  owner?: string;
  /** The profile's NIP-OA owner, whether or not a 30177 of theirs exists. */
  attestedBy?: string;
  respondTo?: string;
  allowlist: string[];
}

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === "string").map((x) => x.toLowerCase()) : [];

/** The profile's owner by a valid NIP-OA tag (exactly one `auth` tag, verified for the agent). */
export function attestedOwner(agent: string, profile: Event | undefined): string | undefined {
  const tags = profile?.tags.filter((t) => t[0] === "auth") ?? [];
  if (tags.length !== 1) return undefined;
  const parsed = parseAuthTag(tags[0]);
  if (!parsed.ok) return undefined;
  const v = verifyAttestation(parsed.value, agent);
  return v.ok ? v.value : undefined;
}

/** Desktop's directory entry for the agent: a trusted 30177 replaces the 10100; a 10100 names no owner. */
export function desktopAgent(agent: string, r: { profile?: Event; entry?: Event; managed: Event[] }): DesktopAgent {
  const attestedBy = attestedOwner(agent, r.profile);
  const trusted = r.managed
    .filter((e) => e.kind === KIND.managedAgent && e.pubkey === attestedBy && tagValue(e, "d") === agent && verifySignature(e))
    .sort((a, b) => b.created_at - a.created_at)[0];
  if (trusted) {
    const c = parseObject(trusted, "managed agent record").obj;
    return {
      source: "30177",
      owner: attestedBy,
      attestedBy,
      respondTo: typeof c.respond_to === "string" ? c.respond_to : undefined,
      allowlist: strings(c.respond_to_allowlist),
    };
  }
  const c = parseObject(r.entry, "directory entry").obj;
  if (!r.entry) return { source: "none", attestedBy, allowlist: [] };
  return {
    source: "10100",
    attestedBy,
    respondTo: typeof c.respond_to === "string" ? c.respond_to : undefined,
    allowlist: strings(c.respond_to_allowlist),
  };
}

/** The agent's role in a roster (39002 `["p", pk, "", role]`), or undefined when it is not in it. */
export function rosterRole(roster: Event | undefined, agent: string): string | undefined {
  const t = roster?.tags.find((x) => x[0] === "p" && x[1] === agent);
  return t ? t[3] || "member" : undefined;
}

export type Audience = { who: "anyone" } | { who: "list"; keys: string[] } | { who: "nobody"; why: string };

/**
 * Whom Desktop offers the agent to in one channel. `type` is the channel's kind (Desktop
 * offers relay agents in stream and forum channels, never in DMs), `role` the agent's seat.
 */
export function desktopAudience(a: DesktopAgent, ch: { type: string; role: string | undefined }, build: "oss" | "release"): Audience {
  if (ch.type === "dm") return { who: "nobody", why: "Desktop offers only the agents it runs itself in DMs" };
  if (ch.role === undefined)
    return { who: "nobody", why: 'the agent is not a member; a member must add it with role bot (kind 9000 with ["role","bot"])' };
  if (ch.role !== "bot") return { who: "nobody", why: `the agent sits as ${ch.role}; an admin must seat it as bot` };
  if (a.source === "none") return { who: "nobody", why: "no directory entry on the relay (identity.directory: on publishes it)" };
  if (build === "release" && !a.owner) return { who: "nobody", why: "no owner record — run buzz-bridge register" };
  switch (a.respondTo) {
    case "anyone":
      return { who: "anyone" };
    case "owner-only":
      return a.owner ? { who: "list", keys: [a.owner] } : { who: "nobody", why: "owner-only, but Desktop knows no owner" };
    case "allowlist":
      return a.allowlist.length ? { who: "list", keys: a.allowlist } : { who: "nobody", why: "the allowlist is empty" };
    default:
      return { who: "nobody", why: "the entry names no respond_to Desktop knows" };
  }
}
