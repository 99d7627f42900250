/**
 * Blossom authorization (BUD-01/02, kind 24242) for a Buzz relay's media routes
 * (docs/protocol.md §2): `Authorization: Nostr <base64 of the signed event>`, the event
 * naming the action (`t`: get or upload), the blob's sha256 (`x`) and an `expiration` a
 * few minutes ahead. Signed per request, like NIP-98.
 */
import type { EventTemplate } from "nostr-tools";
import { KIND } from "./kinds.js";
import { signWith, type SigningKey } from "./nip98.js";
import { nowSec } from "../base/time.js";

export type BlossomAction = "get" | "upload";

/** How long a media authorization stays valid. */
const BLOSSOM_AUTH_TTL_SEC = 300;

function blossomTemplate(action: BlossomAction, sha256: string, server?: string): EventTemplate {
  const now = nowSec();
  const tags = [
    ["t", action],
    ["x", sha256],
    ["expiration", String(now + BLOSSOM_AUTH_TTL_SEC)],
  ];
  if (server) tags.push(["server", server]);
  return { kind: KIND.blossomAuth, created_at: now, content: action === "get" ? "Get blob" : "Upload blob", tags };
}

/** `Nostr <base64 of a signed kind 24242>` for one media request. */
export function blossomHeader(action: BlossomAction, sha256: string, key: SigningKey, server?: string): string {
  const ev = signWith(key, blossomTemplate(action, sha256, server));
  return `Nostr ${Buffer.from(JSON.stringify(ev)).toString("base64")}`;
}
