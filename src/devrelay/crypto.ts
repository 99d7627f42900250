/**
 * Signature checks and relay signing on nostr-wasm through nostr-tools/wasm: schnorr
 * verification is the relay's bottleneck and wasm is ~4x the pure-JS speed
 *. Initialised once per process.
 */
import { initNostrWasm } from "nostr-wasm";
import { setNostrWasm, finalizeEvent } from "nostr-tools/wasm";
import type { Event, EventTemplate } from "nostr-tools";

type NostrWasm = Awaited<ReturnType<typeof initNostrWasm>>;
let wasm: Promise<NostrWasm> | undefined;
let ready: NostrWasm | undefined;

/** Loads the wasm verifier; every other function here needs it resolved first. */
export async function initCrypto(): Promise<void> {
  wasm ??= initNostrWasm().then((nw) => {
    setNostrWasm(nw);
    ready = nw;
    return nw;
  });
  await wasm;
}

/** null when id and signature are right, else the NIP-01 `invalid:` reason. */
export function verifyReason(ev: Event): string | null {
  if (!ready) throw new Error("initCrypto() was not awaited");
  try {
    ready.verifyEvent(ev);
    return null;
  } catch (err) {
    return /^id\b/i.test((err as Error).message) ? "invalid: id is wrong" : "invalid: signature is wrong";
  }
}

export function signWithWasm(t: EventTemplate, sk: Uint8Array): Event {
  if (!ready) throw new Error("initCrypto() was not awaited");
  return finalizeEvent({ ...t, tags: t.tags.map((x) => [...x]) }, sk);
}
