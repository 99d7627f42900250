/**
 * The gate's decision for one relay event, in docs/architecture.md §3's order: own event → not in a
 * configured channel → edit of an already-handled event → owner control command →
 * subscribed kinds → mention requirement → a workflow wake (with `workflows.wake: true`, a
 * relay-signed workflow message for this agent speaks for its owner, nostr/workflow.ts) →
 * respond-to policy (where a verified sibling passes like the owner; the caller looks that
 * up only for refusals it could change). Pure apart from the injected lookups; side
 * effects (logs, reactions, control actions) happen elsewhere.
 *
 * Signatures are verified only for events that would be acted on (control commands and
 * accepted events). The relay client already checks what it receives, but the bridge
 * never trusts a relay's word for who wrote what (docs/protocol.md §5); verifying events the policy
 * drops anyway would only spend CPU on what an attacker can send for free.
 */
import type { Event } from "nostr-tools";
import type { Config } from "../config/schema.js";
import { KIND } from "../nostr/kinds.js";
import { channelOf, threadRootOf } from "../nostr/events.js";
import { eventRefs, isHex64, mentions } from "../nostr/refs.js";
import { authorAllowed, channelPolicy, type AuthorDenial, type ChannelInfo, type ChannelPolicy } from "./policy.js";
import type { SiblingVerdict } from "./siblings.js";
import type { LoopGuard } from "./loop-guard.js";
import { channelKinds } from "../buzz/directory.js";
import { continuationOf, type ActiveConversations, type Continuation } from "./participation.js";
import { tagValue } from "../base/tags.js";
import { isWorkflowMessage, type WakeRefusal, type WakeVerdict } from "../nostr/workflow.js";

const CONTROL_COMMANDS = ["!cancel", "!rotate", "!status", "!shutdown"] as const;
export type ControlCommand = (typeof CONTROL_COMMANDS)[number];

/** Why an event was not acted on; stable strings (logs, metrics, tests). */
export type DropReason =
  | "own-event"
  | "no-channel"
  | "not-configured"
  | "edit-of-handled"
  | "amends-unknown"
  | "kind-not-subscribed"
  | "no-mention"
  | "bad-signature"
  | WakeRefusal
  | AuthorDenial
  /**
   * A message that continued a conversation by participation (no mention) but is not acted
   * on: an agent wrote it, its author could not be looked up, or the respond-to policy
   * refuses its author. Logged only: it was not addressed to the agent.
   */
  | `participation-${"agent" | "unknown-author" | AuthorDenial}`
  /** Another agent's message past `policy.bot_exchanges` in one thread with no person's between (loop-guard.ts). */
  | "loop-guard";

export interface GateContext {
  /** The agent's own pubkey (hex). */
  self: string;
  /** The owner's pubkey (hex); without one, owner-only answers nobody. */
  owner: string | undefined;
  config: Config;
  /** The relay directory's view of a channel; undefined when the identity is not a member. */
  channel(id: string): ChannelInfo | undefined;
  /** True when the event id was already accepted (the durable store), for edit handling. */
  handled(eventId: string): boolean;
  /** Schnorr signature check (the relay client's wasm verifier); called only for events acted on. */
  verify(ev: Event): boolean;
  /**
   * Whether an author the policy refused is a sibling (same owner, NIP-OA); asked only
   * for owner-only, allowlist and DM refusals, and only when an owner is known.
   */
  sibling?(author: string, ev: Event): Promise<SiblingVerdict>;
  /** Thread participation (participation.ts): the conversations the agent is in, and who is an agent. */
  participation?: {
    active: Pick<ActiveConversations, "isThreadActive" | "isChannelActive" | "rebuilding">;
    /**
     * True for an agent (a NIP-OA `auth` tag in its profile, a kind 10100 directory entry, a
     * `bot` seat in a roster, a teammate), undefined when that could not be found out.
     */
    isAgent(author: string): Promise<boolean | undefined>;
    /** The same from what is known without asking the relay (cached profiles, rosters); undefined: ask. */
    agentNow?(author: string): boolean | undefined;
  };
  /** No loops with other bots (loop-guard.ts); absent: agents' mentions are answered without a count. */
  loop?: LoopGuard;
  /**
   * Whether a workflow message may wake the agent (nostr/workflow.ts `verifyWake`, against
   * the relay's NIP-11 `self` as read since the last reconnect); asked only with
   * `workflows.wake: true`.
   */
  workflowWake?(ev: Event): Promise<WakeVerdict>;
}

/** A participation candidate's author, once looked up (see Gate.decide). */
export interface ParticipantVerdict {
  via: Continuation;
  author: "human" | "agent" | "unknown";
}

export type Decision =
  | {
      action: "accept";
      channel: ChannelInfo;
      policy: ChannelPolicy;
      sibling?: SiblingVerdict;
      /** Accepted without a mention: it continues a conversation the agent is in (docs/conversations.md). */
      continued?: Continuation;
      /** A verified workflow wake: the owner it speaks for. */
      workflowOwner?: string;
    }
  /**
   * An edit (40003) or deletion (5) of an event the bridge accepted earlier. Who may amend
   * it and what that does depends on where that event is now (waiting, in a running turn,
   * answered): the daemon decides with the queue; the signature is already verified.
   */
  | { action: "amend"; amend: "edit" | "delete"; targets: string[]; channel: ChannelInfo; policy: ChannelPolicy }
  | { action: "control"; command: ControlCommand; channel: ChannelInfo }
  | {
      /**
       * `drop`: not addressed to the agent in a way it acts on (own event, other kinds, no
       * mention, outside the config). `deny`: addressed to it but refused (respond-to
       * policy, bad signature); respond-to denials may be answered per `on_denied`.
       */
      action: "drop" | "deny";
      reason: DropReason;
      /** debug for the agent's own events, edits and channels outside the config; info otherwise. */
      level: "debug" | "info";
      channel?: ChannelInfo;
      policy?: ChannelPolicy;
      /** Set when a sibling look-up was part of the decision: why the author is not one. */
      sibling?: SiblingVerdict;
      /**
       * A reply in a conversation the agent is in, with no mention: it may continue it once
       * its author is known to be a person (Gate.decide looks that up and decides again).
       */
      candidate?: Continuation;
    };

export type Refusal = Extract<Decision, { action: "drop" | "deny" }>;

function drop(reason: DropReason, extra: { level?: "debug" | "info"; channel?: ChannelInfo; policy?: ChannelPolicy } = {}): Decision {
  return { action: "drop", reason, level: extra.level ?? "info", channel: extra.channel, policy: extra.policy };
}

function deny(reason: DropReason, channel: ChannelInfo, policy: ChannelPolicy, sibling?: SiblingVerdict): Decision {
  return { action: "deny", reason, level: "info", channel, policy, ...(sibling ? { sibling } : {}) };
}

/**
 * Owner control command shape (docs/protocol.md §6): kind 9, exact trimmed text, and
 * addressed to the agent — it `p`-tags the agent, or it is a reply in a thread the agent is
 * in (`inActiveThread`), where Buzz clients reply without tagging anyone.
 */
export function controlCommandOf(ev: Event, self: string, inActiveThread?: (root: string) => boolean): ControlCommand | undefined {
  if (ev.kind !== KIND.message) return undefined;
  const text = commandText(ev);
  if (!text) return undefined;
  if (ev.tags.some((t) => t[0] === "p" && t[1]?.toLowerCase() === self)) return text;
  const root = threadRootOf(ev);
  return root !== ev.id && inActiveThread?.(root) ? text : undefined;
}

/** The command `ev`'s exact trimmed text is, whatever its kind and whoever wrote it. */
function commandText(ev: Pick<Event, "content">): ControlCommand | undefined {
  const text = ev.content.trim() as ControlCommand;
  return CONTROL_COMMANDS.includes(text) ? text : undefined;
}

/**
 * The owner's command in a message addressed to the agent without naming it: one that names
 * no one in a DM, in a channel that needs no mention, or in a channel the agent is active in
 * under `participation: channel` — the places where the same text would reach the agent as
 * a message of its own (docs/security.md).
 */
function unnamedOwnerCommand(ev: Event, ctx: GateContext, channel: ChannelInfo, policy: ChannelPolicy): ControlCommand | undefined {
  if (ctx.owner === undefined || ev.pubkey !== ctx.owner || ev.kind !== KIND.message) return undefined;
  if (ev.tags.some((t) => t[0] === "p")) return undefined;
  const addressed =
    channel.type === "dm" ||
    !policy.require_mention ||
    (policy.participation === "channel" && threadRootOf(ev) === ev.id && ctx.participation?.active.isChannelActive(channel.id) === true);
  return addressed ? commandText(ev) : undefined;
}

/**
 * The owner's control command, when `ev` is one: what every reader of events (the gate, the
 * questions waiting for answers, participation) asks first, so a command is never taken as
 * an answer or as chat (docs/security.md).
 */
export function ownerCommandOf(
  ev: Event,
  self: string,
  owner: string | undefined,
  inActiveThread?: (root: string) => boolean,
): ControlCommand | undefined {
  if (owner === undefined || ev.pubkey !== owner) return undefined;
  return controlCommandOf(ev, self, inActiveThread);
}

/** An edit names the message it replaces with its first `e` tag; only an event id counts. */
function editTarget(ev: Event): string | undefined {
  const target = tagValue(ev, "e");
  return isHex64(target) ? target.toLowerCase() : undefined;
}

/** NIP-09: a deletion names its targets with `e` tags (well-formed ids, at most 50 looked at). */
function deletionTargets(ev: Event): string[] {
  return eventRefs(ev).slice(0, 50);
}

/** Author refusals a sibling can overturn (never `nobody`: that channel answers no one). */
const SIBLING_OVERRIDABLE: ReadonlySet<DropReason> = new Set(["not-owner", "not-allowlisted", "dm-not-owner"]);

/** True when `ev` is a workflow message the gate must check against the relay's key before deciding. */
export function isWakeCandidate(ev: Event, ctx: Pick<GateContext, "config" | "workflowWake">): boolean {
  return ctx.config.workflows.wake && ctx.workflowWake !== undefined && isWorkflowMessage(ev);
}

/** True when `decide` refused the author in a way a verified sibling would pass. */
export function siblingMayChange(d: Decision, ctx: Pick<GateContext, "owner" | "sibling">): boolean {
  return d.action === "deny" && SIBLING_OVERRIDABLE.has(d.reason) && ctx.owner !== undefined && ctx.sibling !== undefined;
}

/**
 * The decision for `ev`. `sibling` is the author's sibling verdict when the caller looked
 * it up (the lookup is async and costs a round trip, so it is only done for refusals it
 * could change — see Gate.handle); without it no author counts as a sibling. `wake` is a
 * workflow message's verdict, looked up likewise (`isWakeCandidate`).
 */
export function decide(
  ev: Event,
  ctx: GateContext,
  sibling?: SiblingVerdict,
  wake?: WakeVerdict,
  participant?: ParticipantVerdict,
): Decision {
  if (ev.pubkey === ctx.self) return drop("own-event", { level: "debug" });

  const channelId = channelOf(ev);
  if (!channelId) return drop("no-channel", { level: "debug" });
  const known = ctx.channel(channelId);
  const policy = channelPolicy(ctx.config, channelId, known !== undefined);
  if (!policy) return drop("not-configured", { level: "debug" });
  const channel: ChannelInfo = known ?? { id: channelId, type: "unknown" };

  if (ev.kind === KIND.edit || ev.kind === KIND.deletion || ev.kind === KIND.groupDeletion) {
    const amend = ev.kind === KIND.edit ? "edit" : "delete";
    const targets = amend === "edit" ? [editTarget(ev)].filter((t): t is string => !!t) : deletionTargets(ev);
    const known = targets.filter((t) => ctx.handled(t));
    // The owner's edit of a message the agent took, to a command's exact text: the command,
    // never the running turn's corrected text.
    const command = amend === "edit" && known.length && ev.pubkey === ctx.owner ? commandText(ev) : undefined;
    if (command) {
      if (!ctx.verify(ev)) return deny("bad-signature", channel, policy);
      return { action: "control", command, channel };
    }
    if (known.length) {
      if (!ctx.verify(ev)) return deny("bad-signature", channel, policy);
      return { action: "amend", amend, targets: known, channel, policy };
    }
    // Edits and deletions of other messages arrive in every channel (they name no one):
    // only an edit in a channel that listens to kind 40003 is a message of its own.
    if (!channelKinds(policy.kinds, channel.type).includes(ev.kind)) return drop("amends-unknown", { level: "debug", channel, policy });
  }

  // Before the policy: the owner can always stop or inspect the agent, even in a channel
  // set to `nobody`. From anyone else the same text is ordinary chat.
  const active = ctx.participation?.active;
  const command =
    ownerCommandOf(ev, ctx.self, ctx.owner, active && ((root) => active.isThreadActive(root, channelId))) ??
    unnamedOwnerCommand(ev, ctx, channel, policy);
  if (command) {
    if (!ctx.verify(ev)) return deny("bad-signature", channel, policy);
    return { action: "control", command, channel };
  }

  if (!channelKinds(policy.kinds, channel.type).includes(ev.kind)) return drop("kind-not-subscribed", { channel, policy });
  let continued: Continuation | undefined;
  if (policy.require_mention && !mentions(ev, ctx.self)) {
    const p = ctx.participation;
    const via = participant?.via ?? (p && continuationOf(ev, ctx.self, policy.participation, channelId, p.active));
    // Chatter the relay delivers for participation's sake is everything said in the channel:
    // debug. A reply in a thread the agent is in that it passes over (handed to someone else)
    // is news to whoever wonders why the agent kept quiet: info, as every mention's fate is.
    const handedOn = !!p && threadRootOf(ev) !== ev.id && p.active.isThreadActive(threadRootOf(ev), channelId);
    const level = policy.participation === "off" || handedOn ? "info" : "debug";
    if (!via) return drop("no-mention", { level, channel, policy });
    if (!participant) return { ...drop("no-mention", { level, channel, policy }), candidate: via } as Decision;
    if (participant.author !== "human")
      return drop(participant.author === "agent" ? "participation-agent" : "participation-unknown-author", { channel, policy });
    continued = via;
  }

  if (wake) {
    // The relay vouches for the workflow's owner: the owner's own rules apply, nobody else's.
    if (!wake.ok) return deny(wake.reason, channel, policy);
    const asOwner = authorAllowed(policy, channel.type, wake.owner, ctx.owner, false);
    if (!asOwner.allowed) return deny(asOwner.reason, channel, policy);
    return { action: "accept", channel, policy, workflowOwner: wake.owner };
  }

  // A sibling is an agent: it is trusted when it asks, never when it merely continues.
  const verdict = authorAllowed(policy, channel.type, ev.pubkey, ctx.owner, sibling === "verified" && !continued);
  // Not addressed to the agent: never answered with 🔒 or a reply, only logged.
  if (!verdict.allowed)
    return continued ? drop(`participation-${verdict.reason}`, { channel, policy }) : deny(verdict.reason, channel, policy, sibling);
  if (!ctx.verify(ev)) return deny("bad-signature", channel, policy);
  return { action: "accept", channel, policy, ...(verdict.by === "sibling" ? { sibling } : {}), ...(continued ? { continued } : {}) };
}
