/**
 * The relay's protocol rules in one place: event shape and limits (docs/protocol.md §7),
 * who may write what where (channel membership, relay-signed kinds), who may read what
 * (channel scoping, p-gating of 44100/44101/24200 — docs/protocol.md §3).
 */
import type { Event } from "nostr-tools";
import type { Filter } from "nostr-tools/filter";
import { KIND, P_GATED_KINDS } from "../nostr/kinds.js";
import { GROUP_STATE_KINDS, type Directory } from "./channels.js";
import type { RelayLimits } from "./limits.js";
import type { EventStore, StoredRecord } from "./store.js";
import { hasTag, tagValue } from "../base/tags.js";
import { eventShapeFault, KIND_MAX, type EventShapeFault } from "../nostr/validate.js";
import { reactionTarget } from "../nostr/events.js";

/** Fixed protocol bounds; Buzz's adjustable limits are in limits.ts. */
export const LIMITS = {
  maxSubIdLength: 64,
} as const;

/** Kinds that live in a channel and must say which with an `h` tag. */
const CHANNEL_KINDS: ReadonlySet<number> = new Set([
  KIND.message,
  KIND.messageV2,
  KIND.edit,
  KIND.reminder,
  KIND.diff,
  KIND.system,
  KIND.approvalRequested,
  46011,
  9005,
  45001,
  45002,
  45003,
  KIND.typing,
  KIND.workStatus,
]);

/** Kinds only the relay signs; clients publishing them are refused. */
const RELAY_ONLY_KINDS: ReadonlySet<number> = new Set([...GROUP_STATE_KINDS, KIND.memberAdded, KIND.memberRemoved, 13534, 8000, 8001]);

/** Kinds Buzz accepts only on the WebSocket (presence, gift wraps). */
export const WS_ONLY_KINDS: ReadonlySet<number> = new Set([KIND.presence, 1059]);

/** The relay's `invalid:` reasons for the shape rules of nostr/validate.ts. */
const SHAPE_REASON: Record<EventShapeFault, string> = {
  object: "invalid: event must be a JSON object",
  id: "invalid: id must be 64 lowercase hex",
  pubkey: "invalid: pubkey must be 64 lowercase hex",
  sig: "invalid: sig must be 128 lowercase hex",
  kind: `invalid: kind must be an integer 0..${KIND_MAX}`,
  created_at: "invalid: created_at must be a non-negative integer",
  content: "invalid: content must be a string",
  tags: "invalid: tags must be an array of string arrays",
};

/** null when `ev` has the NIP-01 event shape, else an `invalid:` reason. */
export function shapeReason(ev: unknown): string | null {
  const fault = eventShapeFault(ev);
  return fault ? SHAPE_REASON[fault] : null;
}

/** Buzz's ingest limits: content size and created_at window. */
export function limitReason(ev: Event, nowSec: number, limits: RelayLimits): string | null {
  const bytes = Buffer.byteLength(ev.content, "utf8");
  if (bytes > limits.contentBytes) return `invalid: content too large (${bytes} bytes, max ${limits.contentBytes})`;
  if (Math.abs(ev.created_at - nowSec) > limits.createdAtSkewSec) {
    return `invalid: created_at is more than ${limits.createdAtSkewSec / 60} minutes from relay time`;
  }
  return null;
}

export type WriteDecision = { ok: true; channel?: string } | { ok: false; reason: string };

/** May `author` (the authenticated key) write `ev`, and in which channel does it land? */
export function authorizeWrite(ev: Event, author: string, dir: Directory, store: EventStore): WriteDecision {
  if (ev.pubkey !== author) return { ok: false, reason: "restricted: event pubkey is not the authenticated key" };
  if (RELAY_ONLY_KINDS.has(ev.kind)) return { ok: false, reason: `restricted: kind ${ev.kind} is written by the relay only` };
  const h = tagValue(ev, "h");
  if (ev.kind === KIND.workStatus && h !== undefined) {
    // NIP-AW: one snapshot per agent and channel, so exactly one `d`, equal to `h`.
    const ds = ev.tags.filter((t) => t[0] === "d");
    if (ds.length !== 1 || ds[0]![1] !== h) return { ok: false, reason: "invalid: kind 30181 needs exactly one d tag equal to its h tag" };
  }
  if (h !== undefined) return channelWrite(h, author, dir);
  if (CHANNEL_KINDS.has(ev.kind)) return { ok: false, reason: `invalid: kind ${ev.kind} needs an h tag naming a channel` };
  if (ev.kind === KIND.reaction) {
    // The reaction inherits the channel of the event it is on.
    const target = reactionTarget(ev);
    if (!target) return { ok: false, reason: "invalid: reaction needs an e tag" };
    const rec = store.get(target);
    if (!rec) return { ok: false, reason: "invalid: reaction target not found" };
    return rec.channel ? channelWrite(rec.channel, author, dir) : { ok: true };
  }
  return { ok: true };
}

function channelWrite(channelId: string, author: string, dir: Directory): WriteDecision {
  const ch = dir.channels.get(channelId);
  if (!ch) return { ok: false, reason: `restricted: unknown channel ${channelId}` };
  if (!ch.members.has(author)) return { ok: false, reason: "restricted: not a channel member" };
  return { ok: true, channel: channelId };
}

/** Channel-level read access: p-gated kinds by recipient, group state and channel events by membership. */
export function canRead(rec: StoredRecord, reader: string, dir: Directory): boolean {
  const ev = rec.event;
  if (P_GATED_KINDS.has(ev.kind)) return hasTag(ev, "p", reader);
  if (GROUP_STATE_KINDS.has(ev.kind)) {
    const d = tagValue(ev, "d");
    return d !== undefined && dir.isMember(d, reader);
  }
  if (rec.channel !== undefined) return dir.isMember(rec.channel, reader);
  return true;
}

/** p-gated kinds reach a filter only when its `#p` is exactly the reader's key. */
export function filterAdmits(filter: Filter, ev: Event, reader: string): boolean {
  if (!P_GATED_KINDS.has(ev.kind)) return true;
  const p = filter["#p"];
  return p !== undefined && p.length === 1 && p[0] === reader;
}

/** A REQ filter naming p-gated kinds without `#p` = [self] is refused outright, so the mistake is visible. */
export function filterReason(filter: unknown, reader: string): string | null {
  if (typeof filter !== "object" || filter === null || Array.isArray(filter)) return "invalid: filter must be a JSON object";
  const f = filter as Record<string, unknown>;
  for (const [k, v] of Object.entries(f)) {
    if (k === "ids" || k === "authors" || k.startsWith("#")) {
      if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) return `invalid: filter ${k} must be an array of strings`;
    } else if (k === "kinds") {
      if (!Array.isArray(v) || !v.every((x) => Number.isInteger(x))) return "invalid: filter kinds must be an array of integers";
    } else if (k === "since" || k === "until" || k === "limit") {
      if (typeof v !== "number" || !Number.isFinite(v)) return `invalid: filter ${k} must be a number`;
    }
  }
  const kinds = f.kinds as number[] | undefined;
  if (kinds?.some((k) => P_GATED_KINDS.has(k)) && !filterAdmits(f as Filter, { kind: KIND.memberAdded } as Event, reader)) {
    return "restricted: kinds 44100/44101/24200 are only served to a filter whose #p is exactly your pubkey";
  }
  return null;
}
