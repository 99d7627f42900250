/**
 * NIP-29 put-user (kind 9000) as Buzz's relay rules it (docs/dev-relay.md "Seats and roles"):
 * in an open channel any authenticated key may add, in a private one only a member; a
 * self-add skips the target's `channel_add_policy`, a third-party add obeys it (from the
 * target's kind 10100: `owner_only` = only its NIP-OA owner, `nobody` = nobody, anything
 * else or none = anyone); and changing a seated member's role takes an owner or admin.
 */
import type { Event } from "nostr-tools";
import { KIND } from "../nostr/kinds.js";
import { tagValue } from "../base/tags.js";
import { parseAuthTag, verifyAttestation } from "../config/nip-oa.js";
import type { Directory } from "./channels.js";
import type { EventStore } from "./store.js";

export type PutUser = { ok: true; channel: string; target: string; role: string } | { ok: false; reason: string };

const HEX64 = /^[0-9a-f]{64}$/;
const MANAGERS = new Set(["owner", "admin"]);

function newestOf(store: EventStore, kind: number, author: string): Event | undefined {
  return store.query({ kinds: [kind], authors: [author], limit: 1 }, () => true, 1)[0]?.event;
}

/** The target's `channel_add_policy`, when its 10100 holds a string one (the relay ignores any other). */
export function addPolicyOf(store: EventStore, target: string): string | undefined {
  const ev = newestOf(store, KIND.agentDirectory, target);
  if (!ev) return undefined;
  try {
    const v = (JSON.parse(ev.content) as Record<string, unknown>).channel_add_policy;
    return typeof v === "string" ? v : undefined;
  } catch {
    return undefined;
  }
}

/** The owner a target's kind 0 names by a NIP-OA tag that verifies for it. */
function ownerOf(store: EventStore, target: string): string | undefined {
  const profile = newestOf(store, KIND.profile, target);
  const tags = profile?.tags.filter((t) => t[0] === "auth") ?? [];
  if (tags.length !== 1) return undefined;
  const parsed = parseAuthTag(tags[0]);
  if (!parsed.ok) return undefined;
  const v = verifyAttestation(parsed.value, target);
  return v.ok ? v.value : undefined;
}

export function decidePutUser(ev: Event, actor: string, dir: Directory, store: EventStore): PutUser {
  const channelId = tagValue(ev, "h");
  const target = tagValue(ev, "p");
  const role = tagValue(ev, "role") ?? "member";
  if (!channelId) return { ok: false, reason: "invalid: kind 9000 needs an h tag naming a channel" };
  if (!target || !HEX64.test(target)) return { ok: false, reason: "invalid: kind 9000 needs a p tag with a 64-hex pubkey" };
  const ch = dir.channels.get(channelId);
  if (!ch) return { ok: false, reason: `restricted: unknown channel ${channelId}` };
  const actorRole = ch.members.get(actor);
  const open = ch.type === "stream" || ch.type === "forum";
  if (!open && actorRole === undefined) return { ok: false, reason: "restricted: actor not authorized" };
  const had = ch.members.get(target);
  if (had !== undefined) {
    if (had === role) return { ok: true, channel: channelId, target, role };
    if (!MANAGERS.has(actorRole ?? "")) return { ok: false, reason: "restricted: only owners/admins may change an active member's role" };
    return { ok: true, channel: channelId, target, role };
  }
  if (actor !== target) {
    const policy = addPolicyOf(store, target);
    if (policy === "nobody") return { ok: false, reason: "restricted: the member's channel_add_policy is nobody" };
    if (policy === "owner_only" && ownerOf(store, target) !== actor)
      return { ok: false, reason: "restricted: the member's channel_add_policy is owner_only and the actor is not its owner" };
  }
  return { ok: true, channel: channelId, target, role };
}
