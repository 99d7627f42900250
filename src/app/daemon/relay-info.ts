/**
 * The relay's NIP-11 document in words, for `/status` and `doctor`: its key, its NIPs, the
 * limits the bridge works within (its frame quota and connection lifetime as the bridge
 * applies them), and what was wrong with the document. Also the address of a channel's
 * work status (NIP-AW), which the status page links to.
 */
import * as nip19 from "nostr-tools/nip19";
import type { RelayInfo } from "../../nostr/nip11.js";
import { KIND } from "../../nostr/kinds.js";
import type { FrameQuota } from "../../relay/frame-budget.js";

export interface RelayInfoView {
  self?: string;
  nips: number[];
  limits: string;
  problems: string[];
}

/** What the client knows: its document, and the budget and lifetime it derived from it. */
export interface RelayInfoSourceView {
  info: RelayInfo;
  frameQuota: FrameQuota | null;
  connectionLifetimeMs: number | undefined;
}

export function describeRelayInfo(r: RelayInfoSourceView): RelayInfoView {
  const l = r.info.limits;
  const quota = r.frameQuota
    ? `${r.frameQuota.frames} frames per ${r.frameQuota.windowMs / 1000}s (WebSocket and HTTP)`
    : "no frame budget";
  const life =
    r.connectionLifetimeMs === undefined ? "no connection lifetime" : `connections renewed within ${r.connectionLifetimeMs / 1000}s`;
  const stated = l.frameQuota ? `; the relay states ${l.frameQuota.frames} per ${l.frameQuota.windowMs / 1000}s` : "";
  return {
    self: r.info.self,
    nips: r.info.supportedNips,
    limits: `${r.info.source === "defaults" ? "Buzz's defaults (no usable document): " : ""}messages ≤ ${l.maxMessageLength} B, content ≤ ${l.maxContentLength} B, ≤ ${l.maxSubscriptions} subscriptions, ≤ ${l.maxFilters} filters per REQ, ${life}; budget ${quota}${stated}`,
    problems: r.info.problems,
  };
}

/** The status page's rows (label → value) for the relay's document. */
export function relayInfoRows(r: RelayInfoSourceView): Array<[label: string, value: string]> {
  const v = describeRelayInfo(r);
  return [
    ["key (NIP-11 self)", v.self ?? "none: workflow wakes are refused"],
    ["NIPs", v.nips.join(", ") || "not stated"],
    ["limits", v.limits],
    ...v.problems.map((p): [string, string] => ["NIP-11 problem", p]),
  ];
}

/** `nostr:naddr1…` of the agent's work status in a channel (kind 30181, `d` = the channel). */
export function workStatusAddress(pubkey: string, channel: string, relayUrl: string): string {
  return `nostr:${nip19.naddrEncode({ kind: KIND.workStatus, pubkey, identifier: channel, relays: [relayUrl] })}`;
}
