/**
 * Buzz's verified workflow wake (docs/protocol.md §4, "Workflow output"): a workflow's message
 * is a kind 9 signed by the relay's own key (its NIP-11 `self`), tagged
 * `["buzz:workflow", "true"]`, `["buzz:workflow-owner", <owner hex>]` and one
 * `["buzz:workflow-mention", <agent hex>]` per agent the owner's workflow step names. Any
 * author can write such tags, so they carry authority only when the signature is the relay's
 * and the shape is exact: one marker, one canonical owner, canonical distinct mentions.
 */
import type { Event, EventTemplate } from "nostr-tools";
import { KIND } from "./kinds.js";
import { verifySignature } from "./verify.js";
import { nowSec } from "../base/time.js";

export const WORKFLOW_TAG = "buzz:workflow";
export const WORKFLOW_OWNER_TAG = "buzz:workflow-owner";
export const WORKFLOW_MENTION_TAG = "buzz:workflow-mention";

const HEX_KEY = /^[0-9a-f]{64}$/;

/** True when `ev` presents itself as workflow output (the only events the wake rules apply to). */
export function isWorkflowMessage(ev: Pick<Event, "kind" | "tags">): boolean {
  return ev.kind === KIND.message && ev.tags.some((t) => t[0] === WORKFLOW_TAG);
}

/** Why a workflow message does not wake this agent; stable strings (logs, metrics, tests). */
export type WakeRefusal =
  /** The bridge has no trusted relay key (no NIP-11 `self`, or it could not be read since the last reconnect). */
  | "workflow-no-relay-key"
  /** Signed by a key the relay used before it rotated: the relay no longer vouches for it. */
  | "workflow-stale-key"
  /** Signed by anyone but the relay's current key, or the signature does not verify. */
  | "workflow-forged"
  /** The marker, owner or mention tags are missing, repeated or not canonical hex. */
  | "workflow-malformed"
  /** The workflow's owner is not this agent's owner. */
  | "workflow-other-owner"
  /** The owner's workflow step does not name this agent. */
  | "workflow-not-for-agent";

export type WakeVerdict = { ok: true; owner: string } | { ok: false; reason: WakeRefusal };

export interface WakeTrust {
  /** The relay's NIP-11 `self` as read since the last (re)connect; undefined when unknown. */
  relaySelf: string | undefined;
  /** Keys the relay announced as `self` before (a rotation): a wake signed by one is stale. */
  previousSelves: ReadonlySet<string>;
  /** This agent's pubkey (hex). */
  agent: string;
  /** The configured or attested owner (hex). */
  owner: string | undefined;
}

/** The owner a workflow message speaks for, when it may wake this agent; else why not. */
export function verifyWake(ev: Event, trust: WakeTrust): WakeVerdict {
  const refuse = (reason: WakeRefusal): WakeVerdict => ({ ok: false, reason });
  if (!trust.relaySelf) return refuse("workflow-no-relay-key");
  if (ev.pubkey !== trust.relaySelf) return refuse(trust.previousSelves.has(ev.pubkey) ? "workflow-stale-key" : "workflow-forged");
  if (!verifySignature(ev)) return refuse("workflow-forged");
  const markers = ev.tags.filter((t) => t[0] === WORKFLOW_TAG);
  if (markers.length !== 1 || markers[0]!.length !== 2 || markers[0]![1] !== "true") return refuse("workflow-malformed");
  const owners = ev.tags.filter((t) => t[0] === WORKFLOW_OWNER_TAG);
  if (owners.length !== 1 || owners[0]!.length !== 2 || !HEX_KEY.test(owners[0]![1]!)) return refuse("workflow-malformed");
  const owner = owners[0]![1]!;
  const mentions = new Set<string>();
  for (const t of ev.tags) {
    if (t[0] !== WORKFLOW_MENTION_TAG) continue;
    if (t.length !== 2 || !HEX_KEY.test(t[1]!) || mentions.has(t[1]!)) return refuse("workflow-malformed");
    mentions.add(t[1]!);
  }
  if (trust.owner === undefined || owner !== trust.owner) return refuse("workflow-other-owner");
  if (!mentions.has(trust.agent)) return refuse("workflow-not-for-agent");
  return { ok: true, owner };
}

/** A workflow's message to `agent` on behalf of `owner`, as Buzz's workflow engine writes it (for the dev relay). */
export function workflowMessage(channel: string, owner: string, agent: string, content: string): EventTemplate {
  return {
    kind: KIND.message,
    created_at: nowSec(),
    content,
    tags: [
      ["h", channel],
      ["p", owner],
      ["p", agent],
      [WORKFLOW_TAG, "true"],
      [WORKFLOW_OWNER_TAG, owner],
      [WORKFLOW_MENTION_TAG, agent],
    ],
  };
}
