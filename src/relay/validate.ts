/**
 * Shape checks for what a relay sends us (NIP-01 event fields), before anything downstream
 * touches it. A relay that sends garbage gets a reason string back, never an exception.
 */
import { getEventHash, type Event } from "nostr-tools/pure";

const HEX64 = /^[0-9a-f]{64}$/;
const HEX128 = /^[0-9a-f]{128}$/;

/** Why `x` is not a well-formed event (undefined when it is). Includes the id-hash check. */
export function eventShapeProblem(x: unknown): string | undefined {
  if (typeof x !== "object" || x === null || Array.isArray(x)) return "not an object";
  const e = x as Record<string, unknown>;
  if (typeof e.id !== "string" || !HEX64.test(e.id)) return "bad id";
  if (typeof e.pubkey !== "string" || !HEX64.test(e.pubkey)) return "bad pubkey";
  if (typeof e.sig !== "string" || !HEX128.test(e.sig)) return "bad sig field";
  if (!Number.isSafeInteger(e.kind) || (e.kind as number) < 0) return "bad kind";
  if (!Number.isSafeInteger(e.created_at) || (e.created_at as number) < 0) return "bad created_at";
  if (typeof e.content !== "string") return "bad content";
  if (!Array.isArray(e.tags) || !e.tags.every((t) => Array.isArray(t) && t.every((s) => typeof s === "string"))) return "bad tags";
  // A cheap sha256: an id that does not match the content would poison id-based dedupe.
  try {
    if (getEventHash(e as unknown as Event) !== e.id) return "id does not match content";
  } catch {
    return "unhashable";
  }
  return undefined;
}
