/**
 * The dev relay's signature checks and signing, on the bridge's one crypto module
 * (nostr/verify.ts: wasm once loaded, pure JS before that or when wasm cannot load), with
 * the relay's `invalid:` reasons and signing that leaves the caller's template untouched.
 */
import type { Event, EventTemplate } from "nostr-tools";
import { signatureProblem, signEvent } from "../nostr/verify.js";

export { initCrypto } from "../nostr/verify.js";

/** null when id and signature are right, else the NIP-01 `invalid:` reason. */
export function verifyReason(ev: Event): string | null {
  const problem = signatureProblem(ev);
  if (!problem) return null;
  return problem === "id" ? "invalid: id is wrong" : "invalid: signature is wrong";
}

/** Signs a copy of `t` (nostr-tools' wasm signer writes id, pubkey and sig into its argument). */
export function signCopy(t: EventTemplate, sk: Uint8Array): Event {
  return signEvent({ ...t, tags: t.tags.map((x) => [...x]) }, sk);
}
