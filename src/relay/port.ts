/**
 * The little a turn and the agent's buzz tools (turn/buzz-tool-handlers.ts) need of the relay:
 * reads, and publishes through the daemon's one publisher (publisher.ts). The daemon plugs
 * in the real ones; tests plug in a socket of their own.
 */
import type { Event, EventTemplate, Filter } from "nostr-tools";
import type { OutageWait } from "./outage.js";

export interface RelayPort {
  sign(t: EventTemplate): Event;
  /** `wait`: a relay outage is waited out until it ends (outage.ts), in the relay client's own retries. */
  publish(ev: Event, wait?: OutageWait): Promise<{ status: string; reason?: string }>;
  query(filters: Filter[], wait?: OutageWait): Promise<Event[]>;
  /** Stores a file in the relay's media store (buzz/media-upload.ts); absent: replies carry no files. */
  upload?(bytes: Uint8Array, type: string): Promise<{ url: string; sha256: string; size: number; type: string }>;
  /** The relay's content limit (its NIP-11): longer messages go out as parts. Default Buzz's 256 KB. */
  contentLimit?(): number;
}
