/**
 * The NIP-01 event shape, one set of rules for both ends: the bridge checks what a relay
 * sends it before anything downstream touches it, and the dev relay checks what a client
 * publishes (devrelay/rules.ts). A relay that sends garbage gets a reason back, never an
 * exception.
 */
import { createHash } from "node:crypto";
import { serializeEvent, type Event } from "nostr-tools/pure";

const HEX64 = /^[0-9a-f]{64}$/;
const HEX128 = /^[0-9a-f]{128}$/;

/** NIP-01's kind range: an integer 0..65535 (docs/protocol.md §4). */
export const KIND_MAX = 65_535;

/** The parts of an event a shape check can find wrong, in the order they are checked. */
export type EventShapeFault = "object" | "id" | "pubkey" | "sig" | "kind" | "created_at" | "content" | "tags";

/**
 * The first part of `x` that is not NIP-01's event shape, or undefined when all are: 64 and
 * 128 lowercase hex digits for id, pubkey and sig, a kind in 0..KIND_MAX, a non-negative safe
 * integer created_at (a larger number would not hash as it was signed), string content and
 * tags as arrays of strings. Neither the id's hash nor the signature is checked here.
 */
export function eventShapeFault(x: unknown): EventShapeFault | undefined {
  if (typeof x !== "object" || x === null || Array.isArray(x)) return "object";
  const e = x as Record<string, unknown>;
  if (typeof e.id !== "string" || !HEX64.test(e.id)) return "id";
  if (typeof e.pubkey !== "string" || !HEX64.test(e.pubkey)) return "pubkey";
  if (typeof e.sig !== "string" || !HEX128.test(e.sig)) return "sig";
  if (!Number.isSafeInteger(e.kind) || (e.kind as number) < 0 || (e.kind as number) > KIND_MAX) return "kind";
  if (!Number.isSafeInteger(e.created_at) || (e.created_at as number) < 0) return "created_at";
  if (typeof e.content !== "string") return "content";
  if (!Array.isArray(e.tags) || !e.tags.every((t) => Array.isArray(t) && t.every((s) => typeof s === "string"))) return "tags";
  return undefined;
}

/** The bridge's short reasons, as its logs name them. */
const PROBLEM: Record<EventShapeFault, string> = {
  object: "not an object",
  id: "bad id",
  pubkey: "bad pubkey",
  sig: "bad sig field",
  kind: "bad kind",
  created_at: "bad created_at",
  content: "bad content",
  tags: "bad tags",
};

/**
 * NIP-01's event id: the sha256 of the event's serialization, hashed by Node's crypto.
 * nostr-tools' `getEventHash` serializes the same way and hashes in JavaScript, which on a
 * busy relay runs hot enough for V8 to compile it, for every event the bridge receives.
 */
export function eventHash(ev: Event): string {
  return createHash("sha256").update(serializeEvent(ev)).digest("hex");
}

/** Why `x` is not a well-formed event (undefined when it is). Includes the id-hash check. */
export function eventShapeProblem(x: unknown): string | undefined {
  const fault = eventShapeFault(x);
  if (fault) return PROBLEM[fault];
  // A cheap sha256: an id that does not match the content would poison id-based dedupe.
  try {
    if (eventHash(x as Event) !== (x as Event).id) return "id does not match content";
  } catch {
    return "unhashable";
  }
  return undefined;
}
