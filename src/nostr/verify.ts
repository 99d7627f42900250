/**
 * Signature checks and signing with the wasm secp256k1 (nostr-wasm via `nostr-tools/wasm`):
 * about 5x faster than pure JS on this class of machine. `initCrypto()`
 * loads the module once; everything afterwards is synchronous. Before it has finished (or if
 * wasm cannot load) the pure-JS implementation is used, so callers never wait or fail.
 */
import * as pure from "nostr-tools/pure";
import * as wasm from "nostr-tools/wasm";
import type { Event, EventTemplate, VerifiedEvent } from "nostr-tools";
import { eventHash } from "./validate.js";

let wasmReady = false;
let loading: Promise<boolean> | undefined;

/** Counters for metrics and benchmarks ("verify only what the gate acts on"). */
export const verifyStats = { verified: 0, failed: 0, signed: 0 };

/** Loads the wasm verifier once; resolves true when it is in use. Safe to call repeatedly. */
export function initCrypto(): Promise<boolean> {
  loading ??= (async () => {
    try {
      const { initNostrWasm } = await import("nostr-wasm");
      wasm.setNostrWasm(await initNostrWasm());
      wasmReady = true;
    } catch {
      wasmReady = false; // pure JS still works, only slower
    }
    return wasmReady;
  })();
  return loading;
}

/**
 * True when `ev`'s id matches its content and the signature is valid for its pubkey. Pass events
 * as parsed from the wire: nostr-tools caches a "verified" mark on objects it signed itself.
 */
export function verifySignature(ev: Event): boolean {
  const ok = verifies(ev);
  if (ok) verifyStats.verified++;
  else verifyStats.failed++;
  return ok;
}

/**
 * What is wrong with `ev`'s id or signature (undefined when both are right), for a relay
 * that must say which (the dev relay's `invalid:` reasons). Not counted in `verifyStats`,
 * which are the bridge's own checks.
 */
export function signatureProblem(ev: Event): "id" | "signature" | undefined {
  if (verifies(ev)) return undefined;
  try {
    return eventHash(ev) === ev.id ? "signature" : "id";
  } catch {
    return "id";
  }
}

function verifies(ev: Event): boolean {
  try {
    return wasmReady ? wasm.verifyEvent(ev) : pure.verifyEvent(ev);
  } catch {
    return false;
  }
}

/** Signs a template with `secretKey` (adds pubkey, id, sig). */
export function signEvent(tpl: EventTemplate, secretKey: Uint8Array): VerifiedEvent {
  verifyStats.signed++;
  return wasmReady ? wasm.finalizeEvent(tpl, secretKey) : pure.finalizeEvent(tpl, secretKey);
}
