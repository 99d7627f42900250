/**
 * The relay engine shared by the WebSocket and HTTP fronts: ingest (verify, check,
 * store, fan out), stored queries with per-reader access, and live fan-out to every
 * subscription whose filters match (full NIP-01 tag matching via nostr-tools) and whose
 * reader may see the event's channel. Built directly on nostr-tools rather than
 * @nostr-relay/core, whose live broadcast ignores tag filters and which only gates DMs.
 */
import type { Event, EventTemplate } from "nostr-tools";
import { matchFilter, type Filter } from "nostr-tools/filter";
import { isEphemeral, KIND } from "../nostr/kinds.js";
import { decidePutUser } from "./put-user.js";
import type { Directory } from "./channels.js";
import { signCopy, verifyReason } from "./crypto.js";
import { BUZZ_LIMITS, type RelayLimits } from "./limits.js";
import { KeyBuckets } from "./rate-limit.js";
import { authorizeWrite, canRead, filterAdmits, limitReason, shapeReason, WS_ONLY_KINDS } from "./rules.js";
import type { EventStore, StoredRecord } from "./store.js";
import { nowSec } from "../base/time.js";

/** Deletion requests (NIP-09 kind 5, NIP-29 kind 9005). */
const DELETION_KINDS: ReadonlySet<number> = new Set([5, 9005]);

/** What the core needs of a live subscriber (a WebSocket connection). */
export interface Subscriber {
  /** The authenticated pubkey, undefined before NIP-42 succeeds. */
  readonly pubkey: string | undefined;
  readonly subs: ReadonlyMap<string, Filter[]>;
  /** Sends a pre-serialised frame. */
  sendRaw(frame: string): void;
}

export interface IngestResult {
  accepted: boolean;
  message: string;
  eventId: string;
}

export interface CoreStats {
  framesIn: number;
  reqFrames: number;
}

export class RelayCore {
  readonly subscribers = new Set<Subscriber>();
  readonly stats: CoreStats = { framesIn: 0, reqFrames: 0 };
  /** Buzz's shared per-pubkey frame quota: every connection and every HTTP call of a key draw from one window. */
  readonly buckets: KeyBuckets;
  private relaySecret: Uint8Array;
  /** The key the relay signed with before its last rotation (for stale-key tests), if it rotated. */
  private previousSecret: Uint8Array | undefined;
  /** The relay's own key (NIP-11 `self`), which signs channel state, membership notices and workflow output. */
  relayPubkey: string;
  /** Seats a member with a role and announces it (39002, 44100): set by the channel admin. */
  onSeat?: (channel: string, pubkey: string, role: string) => void;

  constructor(
    readonly store: EventStore,
    readonly dir: Directory,
    relaySecret: Uint8Array,
    relayPubkey: string,
    readonly limits: RelayLimits = BUZZ_LIMITS,
  ) {
    this.relaySecret = relaySecret;
    this.relayPubkey = relayPubkey;
    this.buckets = new KeyBuckets(limits.frameQuota);
  }

  get hasPreviousKey(): boolean {
    return this.previousSecret !== undefined;
  }

  /** Takes a new signing key; the old one is kept only to sign stale-key test events (`signAs: "previous"`). */
  rotateKey(secret: Uint8Array, pubkey: string): void {
    this.previousSecret = this.relaySecret;
    this.relaySecret = secret;
    this.relayPubkey = pubkey;
  }

  /** One client event, from WS `EVENT` or `POST /events`, written as `author` (the authenticated key). */
  ingest(raw: unknown, author: string, via: "ws" | "http"): IngestResult {
    const eventId = typeof (raw as { id?: unknown })?.id === "string" ? (raw as { id: string }).id : "";
    const refuse = (message: string): IngestResult => ({ accepted: false, message, eventId });
    const shape = shapeReason(raw);
    if (shape) return refuse(shape);
    const ev = raw as Event;
    const bad = verifyReason(ev);
    if (bad) return refuse(bad);
    if (via === "http" && WS_ONLY_KINDS.has(ev.kind)) return refuse(`invalid: kind ${ev.kind} is accepted on the WebSocket only`);
    if (ev.kind === KIND.groupPutUser && ev.pubkey === author) return this.putUser(ev, author, refuse);
    const decision = authorizeWrite(ev, author, this.dir, this.store);
    if (!decision.ok) return refuse(decision.reason);
    const limit = limitReason(ev, nowSec(), this.limits);
    if (limit) return refuse(limit);
    const result = this.accept({ event: clean(ev), channel: decision.channel });
    if (result.accepted && DELETION_KINDS.has(ev.kind)) this.deleteTargets(ev);
    return result;
  }

  /** A kind 9000 put-user: Buzz's seat rules (put-user.ts), then the seat itself through `onSeat`. */
  private putUser(ev: Event, author: string, refuse: (m: string) => IngestResult): IngestResult {
    const d = decidePutUser(ev, author, this.dir, this.store);
    if (!d.ok) return refuse(d.reason);
    const limit = limitReason(ev, nowSec(), this.limits);
    if (limit) return refuse(limit);
    const result = this.accept({ event: clean(ev), channel: d.channel });
    if (result.accepted) this.onSeat?.(d.channel, d.target, d.role);
    return result;
  }

  /** NIP-09 / NIP-29 9005: the author's own events named by `e` tags are removed from storage. */
  private deleteTargets(deletion: Event): void {
    for (const t of deletion.tags) {
      if (t[0] !== "e" || !t[1]) continue;
      const target = this.store.get(t[1]);
      if (target && target.event.pubkey === deletion.pubkey && !DELETION_KINDS.has(target.event.kind)) this.store.delete(t[1]);
    }
  }

  /** Stores (unless ephemeral) and fans out an event that passed every check. */
  accept(rec: StoredRecord): IngestResult {
    const eventId = rec.event.id;
    if (!isEphemeral(rec.event.kind)) {
      const put = this.store.put(rec);
      if (put === "duplicate") return { accepted: true, message: "duplicate: already have this event", eventId };
      if (put === "superseded") return { accepted: true, message: "duplicate: a newer version is stored", eventId };
    }
    this.fanout(rec);
    return { accepted: true, message: "", eventId };
  }

  /**
   * Signs `t` with the relay key and accepts it (NIP-29 state, membership notices, workflow
   * output). `previous`: with the key before the last rotation, as a stale key would.
   */
  publishAsRelay(t: EventTemplate, channel?: string, key: "current" | "previous" = "current"): Event {
    const secret = key === "previous" ? this.previousSecret : this.relaySecret;
    if (!secret) throw new Error("the relay has not rotated its key: there is no previous key");
    const ev = signCopy(t, secret);
    this.accept({ event: ev, channel });
    return ev;
  }

  /** Stored events for `filters` as `reader` sees them: per filter newest first, capped, deduplicated. */
  query(filters: Filter[], reader: string): Event[] {
    const seen = new Set<string>();
    const out: Event[] = [];
    const accept = (rec: StoredRecord) => canRead(rec, reader, this.dir);
    for (const f of filters) {
      const limit = Math.min(f.limit ?? this.limits.maxStoredPerFilter, this.limits.maxStoredPerFilter);
      for (const rec of this.store.query(f, (r) => filterAdmits(f, r.event, reader) && accept(r), limit)) {
        if (seen.has(rec.event.id)) continue;
        seen.add(rec.event.id);
        out.push(rec.event);
      }
    }
    return out;
  }

  count(filters: Filter[], reader: string): number {
    return this.query(
      filters.map((f) => ({ ...f, limit: undefined })),
      reader,
    ).length;
  }

  /** Live delivery: each subscription at most once per event, only where the reader may see it. */
  private fanout(rec: StoredRecord): void {
    let json: string | undefined;
    for (const s of this.subscribers) {
      const reader = s.pubkey;
      if (reader === undefined || s.subs.size === 0) continue;
      let readable: boolean | undefined;
      for (const [subId, filters] of s.subs) {
        if (!filters.some((f) => matchFilter(f, rec.event) && filterAdmits(f, rec.event, reader))) continue;
        readable ??= canRead(rec, reader, this.dir);
        if (!readable) break;
        json ??= JSON.stringify(rec.event);
        s.sendRaw(`["EVENT",${JSON.stringify(subId)},${json}]`);
      }
    }
  }
}

/** Only the NIP-01 fields are kept, so stray client fields are neither stored nor relayed. */
function clean(ev: Event): Event {
  return { id: ev.id, pubkey: ev.pubkey, created_at: ev.created_at, kind: ev.kind, tags: ev.tags, content: ev.content, sig: ev.sig };
}
