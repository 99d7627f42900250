/**
 * NIP-92 media attachments (docs/protocol.md §4): an `imeta` tag per attached file, each
 * entry a `"<key> <value>"` string (`url`, `m` mime type, `x` sha256, `size` bytes, `dim`
 * WxH, `alt` description). Everything in them is written by whoever posted the event, so
 * readers treat every field as a claim to check, never as a fact.
 */
import type { Event } from "nostr-tools";

export interface Imeta {
  url: string;
  /** `m`, lowercased; absent when not given. */
  mime?: string;
  /** `x`, the sha256 of the file (64 lowercase hex) when well-formed. */
  sha256?: string;
  /** `size` in bytes, when a non-negative integer. */
  size?: number;
  dim?: string;
  alt?: string;
  /** A file name when the tag names one (`name`, or Buzz clients' `filename`). */
  name?: string;
}

/** Attachments read at most per event: an event is one message, not an archive. */
const MAX_PER_EVENT = 32;

const HEX64 = /^[0-9a-f]{64}$/;

/** The event's `imeta` attachments with a url, in tag order (at most 32). */
export function imetaOf(ev: Pick<Event, "tags">): Imeta[] {
  const out: Imeta[] = [];
  for (const tag of ev.tags) {
    if (tag[0] !== "imeta") continue;
    const fields = new Map<string, string>();
    for (const entry of tag.slice(1)) {
      if (typeof entry !== "string") continue;
      const space = entry.indexOf(" ");
      if (space <= 0) continue;
      const key = entry.slice(0, space);
      if (!fields.has(key)) fields.set(key, entry.slice(space + 1).trim());
    }
    const url = fields.get("url");
    if (!url) continue;
    const x = fields.get("x")?.toLowerCase();
    const size = fields.get("size");
    const sizeNum = size !== undefined && /^\d{1,16}$/.test(size) ? Number(size) : undefined;
    out.push({
      url,
      mime: fields.get("m")?.toLowerCase() || undefined,
      sha256: x && HEX64.test(x) ? x : undefined,
      size: sizeNum,
      dim: fields.get("dim") || undefined,
      alt: fields.get("alt") || undefined,
      name: fields.get("name") || fields.get("filename") || undefined,
    });
    if (out.length >= MAX_PER_EVENT) break;
  }
  return out;
}

/** The `imeta` tag for a file the bridge published (url, type, hash and size always; the rest when known). */
export function imetaTag(a: {
  url: string;
  mime: string;
  sha256: string;
  size: number;
  dim?: string;
  alt?: string;
  name?: string;
}): string[] {
  const tag = ["imeta", `url ${a.url}`, `m ${a.mime}`, `x ${a.sha256}`, `size ${a.size}`];
  if (a.dim) tag.push(`dim ${a.dim}`);
  if (a.alt) tag.push(`alt ${a.alt}`);
  if (a.name) tag.push(`name ${a.name}`);
  return tag;
}

/** A display name for an attachment: its name, else the last segment of its URL path. */
export function attachmentName(a: Pick<Imeta, "url" | "name">): string {
  if (a.name) return a.name;
  try {
    const last = new URL(a.url).pathname.split("/").filter(Boolean).at(-1);
    if (last) return decodeURIComponent(last);
  } catch {
    // not a URL: the raw text is all there is
  }
  return a.url;
}
