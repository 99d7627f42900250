/**
 * Display names from kind 0 profiles (docs/protocol.md §4), for prompts and logs. A small LRU
 * with a TTL: names change rarely and a stale one for a few minutes is harmless, while a relay
 * round trip per mention is not.
 */
import type { Event } from "nostr-tools";
import type { Filter } from "nostr-tools/filter";
import { npubEncode } from "nostr-tools/nip19";
import { KIND } from "../nostr/kinds.js";
import { BoundedMap } from "../base/bounded-map.js";

export interface ProfileSource {
  query(filters: Filter[]): Promise<Event[]>;
}

export interface Profile {
  pubkey: string;
  /** display_name, else name, else a short npub. */
  displayName: string;
  name?: string;
  picture?: string;
  /**
   * The profile's NIP-OA `auth` tag (an agent's owner attestation), unverified: exactly one,
   * since a profile carrying several names no single owner. Whoever acts on it verifies it.
   */
  authTag?: string[];
  /** The author publishes a Buzz agent directory entry (kind 10100): it says it is an agent. */
  directoryEntry?: boolean;
}

export interface ProfileCacheOptions {
  /** Profiles kept. Default 500: a busy team fits, memory stays trivial. */
  capacity?: number;
  /** Re-fetch after this long. Default 10 min. */
  ttlMs?: number;
}

export function shortNpub(pubkey: string): string {
  try {
    const n = npubEncode(pubkey);
    return `${n.slice(0, 10)}…${n.slice(-4)}`;
  } catch {
    return pubkey.slice(0, 8);
  }
}

export function profileOf(pubkey: string, ev: Event | undefined, directoryEntry = false): Profile {
  let meta: Record<string, unknown> = {};
  try {
    if (ev) meta = JSON.parse(ev.content) as Record<string, unknown>;
  } catch {
    // a malformed profile is treated as no profile
  }
  const str = (k: string) => (typeof meta[k] === "string" && (meta[k] as string).trim() ? (meta[k] as string).trim() : undefined);
  const auth = ev?.tags.filter((t) => t[0] === "auth") ?? [];
  return {
    pubkey,
    displayName: str("display_name") ?? str("name") ?? shortNpub(pubkey),
    name: str("name"),
    picture: str("picture"),
    authTag: auth.length === 1 ? auth[0] : undefined,
    ...(directoryEntry ? { directoryEntry } : {}),
  };
}

/** The authors' profiles, and whether they publish an agent directory entry (10100), in one query. */
function profileFilters(authors: string[]): Filter[] {
  return [
    { kinds: [KIND.profile], authors },
    { kinds: [KIND.agentDirectory], authors, limit: authors.length },
  ];
}

export class ProfileCache {
  /** Least recently used forgotten first: a read sets its entry again. */
  private readonly entries: BoundedMap<string, { p: Profile; at: number }>;
  /** Look-ups on their way to the relay: a burst of events from one author asks once, not once per event. */
  private readonly inFlight = new Map<string, Promise<Profile | undefined>>();
  private readonly ttlMs: number;

  constructor(
    private readonly source: ProfileSource,
    opts: ProfileCacheOptions = {},
  ) {
    this.entries = new BoundedMap(opts.capacity ?? 500);
    this.ttlMs = opts.ttlMs ?? 10 * 60_000;
  }

  /** Cached profile, or undefined (no fetch). */
  peek(pubkey: string): Profile | undefined {
    const e = this.entries.get(pubkey);
    if (!e || Date.now() - e.at > this.ttlMs) return undefined;
    this.entries.set(pubkey, e);
    return e.p;
  }

  /** Profiles for `pubkeys`, fetching the missing ones in one query. A failed fetch yields short npubs. */
  async resolve(pubkeys: string[]): Promise<Map<string, Profile>> {
    const out = new Map<string, Profile>();
    const missing: string[] = [];
    for (const pk of new Set(pubkeys)) {
      const p = this.peek(pk);
      if (p) out.set(pk, p);
      else missing.push(pk);
    }
    if (missing.length) {
      let events: Event[] = [];
      let fetched = true;
      try {
        events = await this.source.query(profileFilters(missing));
      } catch {
        fetched = false; // not cached: the next call tries again
      }
      const newest = new Map<string, Event>();
      for (const ev of events)
        if (ev.kind === KIND.profile && (!newest.has(ev.pubkey) || ev.created_at > newest.get(ev.pubkey)!.created_at))
          newest.set(ev.pubkey, ev);
      const entries = new Set(events.filter((e) => e.kind === KIND.agentDirectory).map((e) => e.pubkey));
      for (const pk of missing) {
        const p = profileOf(pk, newest.get(pk), entries.has(pk));
        if (fetched) this.put(p);
        out.set(pk, p);
      }
    }
    return out;
  }

  /**
   * One profile, from the cache or the relay; undefined when the relay could not be asked
   * (nothing is cached then, so the next call asks again). A pubkey without a profile
   * yields the short-npub profile, cached like any other answer.
   */
  lookup(pubkey: string): Promise<Profile | undefined> {
    const hit = this.peek(pubkey);
    if (hit) return Promise.resolve(hit);
    let pending = this.inFlight.get(pubkey);
    if (!pending) {
      pending = this.fetchOne(pubkey).finally(() => this.inFlight.delete(pubkey));
      this.inFlight.set(pubkey, pending);
    }
    return pending;
  }

  private async fetchOne(pubkey: string): Promise<Profile | undefined> {
    let events: Event[];
    try {
      events = await this.source.query(profileFilters([pubkey]));
    } catch {
      return undefined;
    }
    const newest = events
      .filter((e) => e.kind === KIND.profile && e.pubkey === pubkey)
      .reduce<Event | undefined>((a, e) => (!a || e.created_at > a.created_at ? e : a), undefined);
    const p = profileOf(
      pubkey,
      newest,
      events.some((e) => e.kind === KIND.agentDirectory && e.pubkey === pubkey),
    );
    this.put(p);
    return p;
  }

  async displayName(pubkey: string): Promise<string> {
    return (await this.resolve([pubkey])).get(pubkey)!.displayName;
  }

  private put(p: Profile): void {
    this.entries.set(p.pubkey, { p, at: Date.now() });
  }
}
