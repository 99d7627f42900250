/**
 * The ids and keys an event's tags name, shape-checked (docs/security.md): an `e` value is
 * an event id and a `p` or `mention` value a pubkey, both 64 hex digits; an `e` tag's
 * marker is one NIP-10 knows. A tag value is written by whoever signed the event, so
 * anything else is ignored by every reader here — it never becomes a thread, a scope key,
 * a prompt line or a tag of a reply — and `tagFaults` says what was ignored, for the log.
 */
import { MENTION_CAP } from "../contract/limits.js";

const HEX64 = /^[0-9a-fA-F]{64}$/;

/** True for 64 hex digits (either case; readers lowercase what they return). */
export function isHex64(value: unknown): value is string {
  return typeof value === "string" && HEX64.test(value);
}

/** NIP-10's `e` markers; an empty or absent marker is a positional tag, which the bridge does not read. */
export type EMarker = "root" | "reply" | "mention";
const MARKERS: ReadonlySet<string> = new Set(["root", "reply", "mention", ""]);

type Tagged = { readonly tags: readonly (readonly string[])[] };

/** The id of the first `e` tag with `marker` whose value is an event id; malformed ones are skipped. */
export function markedRef(ev: Tagged, marker: EMarker): string | undefined {
  for (const t of ev.tags) if (t[0] === "e" && t[3] === marker && isHex64(t[1])) return t[1].toLowerCase();
  return undefined;
}

/** The event ids of every `e` tag (any marker), in order, repeats dropped; malformed ones skipped. */
export function eventRefs(ev: Tagged): string[] {
  const out = new Set<string>();
  for (const t of ev.tags) if (t[0] === "e" && isHex64(t[1]) && MARKERS.has(t[3] ?? "")) out.add(t[1].toLowerCase());
  return [...out];
}

/**
 * The pubkeys an event mentions (`p` and Buzz's `mention` tags), in order, repeats dropped,
 * at most `cap` (Buzz's own cap on mentions, contract/limits.ts): a message carrying
 * thousands of `p` tags costs what fifty do.
 */
export function mentionRefs(ev: Tagged, cap = MENTION_CAP): string[] {
  const out = new Set<string>();
  for (const t of ev.tags) {
    if ((t[0] === "p" || t[0] === "mention") && isHex64(t[1])) {
      out.add(t[1].toLowerCase());
      if (out.size >= cap) break;
    }
  }
  return [...out];
}

/** True when a `p` or `mention` tag names `pubkey` (all tags are looked at, not only the first `cap`). */
export function mentions(ev: Tagged, pubkey: string): boolean {
  return ev.tags.some((t) => (t[0] === "p" || t[0] === "mention") && typeof t[1] === "string" && t[1].toLowerCase() === pubkey);
}

/** One tag value a reader ignored, described without the value itself (it may be long or hostile). */
export interface TagFault {
  tag: string;
  /** The tag's position in the event's tag list. */
  index: number;
  reason: "not 64 hex digits" | "unknown NIP-10 marker" | "over the mention cap";
}

/**
 * What the readers above ignore in `ev`: `e`/`p`/`mention` values that are not 64 hex
 * digits, `e` markers NIP-10 does not define, and mentions beyond the cap (counted, not
 * listed one by one). At most `max` faults are listed; `total` counts them all.
 */
export function tagFaults(ev: Tagged, max = 10): { faults: TagFault[]; total: number; overCap: number } {
  const faults: TagFault[] = [];
  let total = 0;
  const mentioned = new Set<string>();
  let overCap = 0;
  ev.tags.forEach((t, index) => {
    const name = t[0];
    if (name !== "e" && name !== "p" && name !== "mention") return;
    let reason: TagFault["reason"] | undefined;
    if (!isHex64(t[1])) reason = "not 64 hex digits";
    else if (name === "e" && !MARKERS.has(t[3] ?? "")) reason = "unknown NIP-10 marker";
    else if (name !== "e") {
      const pk = t[1].toLowerCase();
      if (!mentioned.has(pk)) {
        if (mentioned.size >= MENTION_CAP) overCap++;
        else mentioned.add(pk);
      }
    }
    if (!reason) return;
    total++;
    if (faults.length < max) faults.push({ tag: name, index, reason });
  });
  return { faults, total, overCap };
}
