/**
 * NIP-42 AUTH event (docs/protocol.md §1): kind 22242 with `relay` and `challenge` tags. Buzz
 * compares the `relay` tag exactly with `ws(s)://host[:port]`, no path and no trailing slash,
 * while nostr-tools always adds one, so the URL is normalised here before signing.
 */
import { makeAuthEvent } from "nostr-tools/nip42";
import type { EventTemplate } from "nostr-tools";
import { RelayUsageError } from "./errors.js";

/** `wss://buzz.example.com/` → `wss://buzz.example.com`; the path is dropped, as Buzz expects. */
export function relayTagUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new RelayUsageError(`relay url "${url}" is not a URL; expected ws://host:port or wss://host`);
  }
  if (u.protocol !== "ws:" && u.protocol !== "wss:") throw new RelayUsageError(`relay url "${url}" must start with ws:// or wss://`);
  return `${u.protocol}//${u.host}`;
}

/** `ws://h:1/` → `http://h:1`, `wss://h` → `https://h` (the NIP-98 HTTP bridge's origin). */
export function httpOrigin(url: string): string {
  const tag = relayTagUrl(url);
  return tag.replace(/^ws/, "http");
}

export function authTemplate(url: string, challenge: string): EventTemplate {
  const tpl = makeAuthEvent(relayTagUrl(url), challenge);
  tpl.tags = tpl.tags.map((t) => (t[0] === "relay" ? ["relay", relayTagUrl(url)] : t));
  return tpl;
}
