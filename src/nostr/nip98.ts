/**
 * NIP-98 `Authorization` header for the relay's HTTP bridge (docs/protocol.md §2): our own kind
 * 27235 event, because nostr-tools' `getToken` has no `nonce` and hashes `JSON.stringify` of a
 * value rather than the bytes actually sent. Buzz accepts each NIP-98 event id once, so two
 * identical requests in one second need the nonce to get different ids.
 */
import { createHash, randomUUID } from "node:crypto";
import type { Event, EventTemplate } from "nostr-tools";
import { KIND } from "./kinds.js";
import { signEvent } from "./verify.js";
import { nowSec } from "../base/time.js";

function nip98Template(url: string, method: string, body: Uint8Array | undefined): EventTemplate {
  const tags = [
    ["u", url],
    ["method", method.toUpperCase()],
    ["nonce", randomUUID()],
  ];
  if (body?.length) tags.push(["payload", createHash("sha256").update(body).digest("hex")]);
  return { kind: KIND.httpAuth, created_at: nowSec(), content: "", tags };
}

/** Signs with the secret key itself, or through whoever holds it (the relay client's `sign`). */
export type SigningKey = Uint8Array | ((t: EventTemplate) => Event);

export function signWith(key: SigningKey, t: EventTemplate): Event {
  return key instanceof Uint8Array ? signEvent(t, key) : key(t);
}

/** `Nostr <base64 of the signed event JSON>`; call once per attempt (each id is single-use). */
export function nip98Header(url: string, method: string, body: Uint8Array | undefined, key: SigningKey): string {
  const ev = signWith(key, nip98Template(url, method, body));
  return `Nostr ${Buffer.from(JSON.stringify(ev)).toString("base64")}`;
}
