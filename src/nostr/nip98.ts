/**
 * NIP-98 `Authorization` header for the relay's HTTP bridge (docs/protocol.md §2): our own kind
 * 27235 event, because nostr-tools' `getToken` has no `nonce` and hashes `JSON.stringify` of a
 * value rather than the bytes actually sent. Buzz accepts each NIP-98 event id once, so two
 * identical requests in one second need the nonce to get different ids.
 */
import { createHash, randomUUID } from "node:crypto";
import type { EventTemplate } from "nostr-tools";
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

/** `Nostr <base64 of the signed event JSON>`; call once per attempt (each id is single-use). */
export function nip98Header(url: string, method: string, body: Uint8Array | undefined, secretKey: Uint8Array): string {
  const ev = signEvent(nip98Template(url, method, body), secretKey);
  return `Nostr ${Buffer.from(JSON.stringify(ev)).toString("base64")}`;
}
