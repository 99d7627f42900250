/**
 * Event storage for the dev relay. A record is an event plus the channel the relay
 * derived for it (the `h` tag, or for a reaction the channel of its target), because
 * read access is decided per channel. Replaceable kinds keep the newest per
 * kind+pubkey, addressable kinds per kind+pubkey+`d` (NIP-01). Ephemeral events never
 * reach a store.
 */
import type { Event } from "nostr-tools";
import { matchFilter, type Filter } from "nostr-tools/filter";
import { isAddressable, isReplaceable } from "../nostr/kinds.js";
import { tagValue } from "../base/tags.js";

export interface StoredRecord {
  event: Event;
  channel?: string;
}

/** `stored`: new; `duplicate`: same id already there; `superseded`: a newer replaceable version exists. */
export type PutResult = "stored" | "duplicate" | "superseded";

export interface EventStore {
  put(rec: StoredRecord): PutResult;
  get(id: string): StoredRecord | undefined;
  /** Removes one event (NIP-09 deletion); true when it was there. */
  delete(id: string): boolean;
  /** Matching records, newest first (ties: lower id first), only those `accept` passes, at most `limit`. */
  query(filter: Filter, accept: (rec: StoredRecord) => boolean, limit: number): StoredRecord[];
  count(): number;
  getMeta(key: string): string | undefined;
  setMeta(key: string, value: string): void;
  close(): void;
}

/** The key under which a replaceable/addressable event replaces its older versions. */
export function replaceKey(ev: Event): string | undefined {
  if (isReplaceable(ev.kind)) return `${ev.kind}:${ev.pubkey}`;
  if (isAddressable(ev.kind)) return `${ev.kind}:${ev.pubkey}:${tagValue(ev, "d") ?? ""}`;
  return undefined;
}

/** NIP-01 order for replaceable versions: newer created_at wins, on a tie the lower id. */
export function isNewer(a: Event, b: Event): boolean {
  return a.created_at > b.created_at || (a.created_at === b.created_at && a.id < b.id);
}

/** Sort order of the in-memory index: ascending, so walking backwards yields newest first. */
function before(a: Event, b: Event): boolean {
  return a.created_at < b.created_at || (a.created_at === b.created_at && a.id > b.id);
}

export class MemoryStore implements EventStore {
  private readonly byId = new Map<string, StoredRecord>();
  private readonly byReplaceKey = new Map<string, StoredRecord>();
  /** Ascending by (created_at, -id); appends are the common case. */
  private readonly ordered: StoredRecord[] = [];
  private readonly meta = new Map<string, string>();

  put(rec: StoredRecord): PutResult {
    const ev = rec.event;
    if (this.byId.has(ev.id)) return "duplicate";
    const key = replaceKey(ev);
    if (key) {
      const old = this.byReplaceKey.get(key);
      if (old && !isNewer(ev, old.event)) return "superseded";
      if (old) this.remove(old);
      this.byReplaceKey.set(key, rec);
    }
    this.byId.set(ev.id, rec);
    this.insertOrdered(rec);
    return "stored";
  }

  get(id: string): StoredRecord | undefined {
    return this.byId.get(id);
  }

  query(filter: Filter, accept: (rec: StoredRecord) => boolean, limit: number): StoredRecord[] {
    const out: StoredRecord[] = [];
    if (limit <= 0) return out;
    if (filter.ids) {
      for (const id of filter.ids) {
        const rec = this.byId.get(id);
        if (rec && matchFilter(filter, rec.event) && accept(rec)) out.push(rec);
      }
      out.sort((a, b) => (before(a.event, b.event) ? 1 : -1));
      return out.slice(0, limit);
    }
    for (let i = this.ordered.length - 1; i >= 0; i--) {
      const rec = this.ordered[i]!;
      if (filter.since !== undefined && rec.event.created_at < filter.since) break;
      if (!matchFilter(filter, rec.event) || !accept(rec)) continue;
      out.push(rec);
      if (out.length >= limit) break;
    }
    return out;
  }

  delete(id: string): boolean {
    const rec = this.byId.get(id);
    if (!rec) return false;
    this.remove(rec);
    const key = replaceKey(rec.event);
    if (key && this.byReplaceKey.get(key) === rec) this.byReplaceKey.delete(key);
    return true;
  }

  count(): number {
    return this.byId.size;
  }

  getMeta(key: string): string | undefined {
    return this.meta.get(key);
  }

  setMeta(key: string, value: string): void {
    this.meta.set(key, value);
  }

  close(): void {}

  private insertOrdered(rec: StoredRecord): void {
    let i = this.ordered.length;
    while (i > 0 && before(rec.event, this.ordered[i - 1]!.event)) i--;
    this.ordered.splice(i, 0, rec);
  }

  private remove(rec: StoredRecord): void {
    this.byId.delete(rec.event.id);
    const i = this.ordered.indexOf(rec);
    if (i >= 0) this.ordered.splice(i, 1);
  }
}
