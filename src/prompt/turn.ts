/**
 * The prompt of one turn (docs/architecture.md §3), as separate text blocks: standing
 * context on a session's first turn when it was not sent as systemPrompt (else a one-time
 * "settings changed" block when team instructions or the description changed), a context
 * block (scope, channel, thread root, what to reply to and whom), up to `history` earlier
 * messages not yet shown to this session, then one block per event. Everything written
 * by channel members is fenced and labelled untrusted.
 */
import type { Event } from "nostr-tools";
import type { Filter } from "nostr-tools/filter";
import type { Logger } from "../base/log.js";
import { FORUM_KINDS, KIND } from "../nostr/kinds.js";
import { mentionsOf, parentOf, threadRootOf } from "../nostr/events.js";
import { isHex64 } from "../nostr/refs.js";
import {
  block,
  cutForPrompt,
  fence,
  hexId,
  inline,
  joined,
  npubText,
  operatorText,
  p,
  timeText,
  type PromptBlock,
  type PromptText,
  type TextBlock,
} from "./text.js";
import {
  attachmentBlocks,
  attachmentListing,
  listedOnly,
  type AttachmentResolver,
  type MediaCapabilities,
  type ResolvedAttachment,
} from "./attachment-listing.js";
import { imetaOf } from "../nostr/imeta.js";
import { buildStanding, channelLines, type StandingInput } from "./standing.js";
import { settingsOf, type PromptSession, type SessionSettings } from "./session.js";
import { tagValue } from "../base/tags.js";

export interface TurnPromptOptions {
  /** The agent's pubkey (hex): its own messages in history are labelled "you". */
  self: string;
  /** `POST /query` on the relay (NIP-98); failures leave history out, never the turn. */
  query(filters: Filter[]): Promise<Event[]>;
  /**
   * Display names (kind 0) for these pubkeys, as far as known: one batch per prompt, at
   * most NAME_LOOKUPS pubkeys (the people asking first), so a message naming thousands of
   * people costs one bounded look-up.
   */
  displayNames(pubkeys: string[]): Promise<ReadonlyMap<string, string | undefined>>;
  /** Downloads what the turn's messages attach; without it attachments are only listed. */
  attachments?: AttachmentResolver;
  logger?: Logger;
}

export interface TurnInput {
  scope: { key: string; channel: string; root?: string };
  channelType?: string;
  /** The batch, oldest first; the last event is the reply anchor unless `anchor` is given. */
  events: Event[];
  /** The message to reply to when it is not the last event (an edit's target). */
  anchor?: Event;
  /** Current standing context (settings may have changed since the session began). */
  standing: StandingInput;
  /** Messages of history at most (`history` in the channel policy); 0 = none. */
  history: number;
  /** What the agent takes besides text; none when not given. */
  media?: MediaCapabilities;
}

const NO_MEDIA: MediaCapabilities = { image: false, embeddedContext: false };

const HISTORY_KINDS = [KIND.message, KIND.messageV2, ...FORUM_KINDS];

/**
 * How messages that arrive while a turn runs are put to the agent, so it can tell them
 * apart: `steer` = additions (and corrections) to what it is doing; `interrupt` = they
 * supersede the earlier request; `early` = they came before it started working.
 */
export type MidTurnFraming = "steer" | "interrupt" | "early";

const MID_TURN_HEADER: Record<MidTurnFraming, PromptText> = {
  steer: p`Mid-turn: the messages below arrived while you were working on the request above. Keep what you already did and published; continue with these taken into account (an addition adds to the request, a correction replaces the text of the message it edits). Answer once, covering the earlier request and these.`,
  interrupt: p`Mid-turn: the messages below supersede the earlier request. Stop working on it (what you already published stays) and act on these instead. Answer once.`,
  early: p`Mid-turn: the messages below arrived just before you started; treat them as part of this request.`,
};

/**
 * Display names looked up for one prompt at most: the authors of the turn's messages
 * first, then history's, then the people mentioned. The rest are shown by npub alone.
 */
export const NAME_LOOKUPS = 100;

/** Who a pubkey is, for a prompt line: the agent itself, else its display name (fenced) and npub. */
type Who = (pk: string) => PromptText;

/** An event whose text an edit replaced while it waited (the queue keeps the edit's id here). */
export interface EditedEvent extends Event {
  edited?: string;
}

/** The thread the turn is about: the scope's root, or in channel scope the anchor's own thread. */
function threadOf(input: TurnInput, ev: Event): string | undefined {
  if (input.scope.root) return input.scope.root;
  const root = threadRootOf(ev);
  return root === ev.id ? undefined : root;
}

export class TurnPromptBuilder {
  constructor(private readonly opts: TurnPromptOptions) {}

  async build(session: PromptSession, input: TurnInput): Promise<PromptBlock[]> {
    const events = [...input.events].sort((a, b) => a.created_at - b.created_at);
    if (!events.length) throw new RangeError("a turn prompt needs at least one event");
    const blocks: PromptBlock[] = [];

    if (!session.standingSent) {
      blocks.push(...buildStanding(input.standing).blocks);
      session.standingSent = true;
      session.settings = settingsOf(input.standing);
    } else {
      const changed = this.settingsChanged(session.settings, settingsOf(input.standing), input.standing);
      if (changed) blocks.push(changed);
      session.settings = settingsOf(input.standing);
    }

    const history = await this.history(session, input, events);
    const who = await this.who([...events, ...history.events]);

    blocks.push(block(this.context(input, events, who)));
    if (history.text || history.events.length) blocks.push(block(this.historyText(history, input.history, who)));
    const retracted = this.retractions(session, who);
    if (retracted) blocks.push(retracted);
    const files = await this.attachmentsOf(events, input.media);
    events.forEach((ev, i) => blocks.push(...this.eventBlocks(ev, i, events.length, who, files.get(ev.id))));

    session.markDelivered([...history.events.map((e) => e.id), ...events.map((e) => e.id)]);
    return blocks;
  }

  /**
   * The blocks for messages that arrived while a turn runs (a native steer or the prompt
   * after a cancel): a framing header, then one labelled block per message.
   */
  async midTurn(
    session: PromptSession,
    events: Event[],
    framing: MidTurnFraming,
    anchor?: Event,
    media?: MediaCapabilities,
  ): Promise<PromptBlock[]> {
    const sorted = [...events].sort((a, b) => a.created_at - b.created_at);
    const who = await this.who(sorted);
    const blocks: PromptBlock[] = [block(MID_TURN_HEADER[framing])];
    const retracted = this.retractions(session, who);
    if (retracted) blocks.push(retracted);
    const last = anchor ?? sorted[sorted.length - 1];
    const files = await this.attachmentsOf(sorted, media);
    const label = framing === "interrupt" ? p`Superseding message` : p`Added while you were working`;
    sorted.forEach((ev, i) => blocks.push(...this.eventBlocks(ev, i, sorted.length, who, files.get(ev.id), label)));
    if (last) blocks.push(block(p`Reply to: event ${hexId(last.id)} from ${who(last.pubkey)} (send_message, reply_to ${hexId(last.id)}).`));
    session.markDelivered(sorted.map((e) => e.id));
    return blocks;
  }

  /** The turn's attachments, downloaded where the agent takes them (none listed when nothing is attached). */
  private async attachmentsOf(events: Event[], media: MediaCapabilities | undefined): Promise<Map<string, ResolvedAttachment[]>> {
    const resolver = this.opts.attachments;
    if (!events.some((e) => imetaOf(e).length)) return new Map();
    if (!resolver) return new Map(events.map((e) => [e.id, listedOnly(e)]));
    return resolver.resolve(events, media ?? NO_MEDIA);
  }

  /** A message's text block, then the files it attached that the agent is given. */
  private eventBlocks(
    ev: EditedEvent,
    i: number,
    n: number,
    who: Who,
    files: ResolvedAttachment[] | undefined,
    label?: PromptText,
  ): PromptBlock[] {
    const text = this.eventText(ev, i, n, who, label);
    const listing = files && attachmentListing(files);
    return [block(listing ? joined([text, listing]) : text), ...(files ? attachmentBlocks(files) : [])];
  }

  private retractions(session: PromptSession, who: Who): TextBlock | undefined {
    const r = session.takeRetractions();
    if (!r.length) return undefined;
    return block(
      joined([
        p`Retracted since you saw them (deleted by their authors); do not act on them any further:`,
        ...r.map((x) => p`- event ${hexId(x.id)} from ${who(x.author)}`),
      ]),
    );
  }

  private settingsChanged(was: SessionSettings, now: SessionSettings, standing: StandingInput): TextBlock | undefined {
    const lines: PromptText[] = [];
    if (was.channelName !== now.channelName || was.about !== now.about) lines.push(...channelLines(standing.channel));
    if (was.about !== now.about && !now.about) lines.push(p`Description: (removed)`);
    if (was.persona !== now.persona)
      lines.push(now.persona ? p`Agent instructions:\n${operatorText(now.persona)}` : p`Agent instructions: (removed)`);
    if (was.teamInstructions !== now.teamInstructions)
      lines.push(now.teamInstructions ? p`Team instructions:\n${operatorText(now.teamInstructions)}` : p`Team instructions: (removed)`);
    if (!lines.length) return undefined;
    return block(joined([p`Settings changed since this session started; these replace the earlier ones:`, ...lines]));
  }

  private context(input: TurnInput, events: Event[], who: Who): PromptText {
    const anchor = input.anchor ?? events[events.length - 1]!;
    const { scope } = input;
    const root = threadOf(input, anchor);
    const dm = input.channelType === "dm" || input.channelType === "unknown";
    const id = hexId(anchor.id);
    const lines = [p`Context:`];
    lines.push(p`Scope: ${scope.root ? p`thread ${hexId(scope.root)}` : dm ? p`direct messages` : p`channel`}`);
    lines.push(...channelLines(input.standing.channel));
    if (root) lines.push(p`Thread root: ${hexId(root)}${root === anchor.id ? p` (this message starts a new thread)` : p``}`);
    lines.push(p`Reply to: event ${id} from ${who(anchor.pubkey)}`);
    const requesters = [...new Set(events.map((e) => e.pubkey))].filter((pk) => pk !== this.opts.self);
    if (requesters.length > 1 || events.length > 1) lines.push(p`Requesters: ${joined(requesters.map(who), ", ")}`);
    // Several messages from separate threads (a channel-scope batch): each asker looks for
    // the answer in their own thread, so one reply under the last message would leave the
    // others unanswered where they asked.
    const threads = new Set(events.map((e) => threadOf(input, e) ?? e.id));
    if (events.length > 1 && threads.size > 1) {
      lines.push(
        p`Answer each message for you in its own thread: one send_message per message, with reply_to set to that message's event id.`,
      );
    } else {
      lines.push(
        !root || root === anchor.id
          ? p`Answer with send_message in this new thread (reply_to ${id}); do not answer in older threads.`
          : p`Answer with send_message in this thread (reply_to ${id}) unless you are asked for a top-level post.`,
      );
    }
    return joined(lines);
  }

  private async history(
    session: PromptSession,
    input: TurnInput,
    events: Event[],
  ): Promise<{ events: Event[]; text?: PromptText; total: number }> {
    if (input.history <= 0) return { events: [], total: 0 };
    const channel = input.scope.channel;
    const first = events[0]!;
    const last = events[events.length - 1]!;
    const batch = new Set(events.map((e) => e.id));
    const thread = threadOf(input, first);
    const root = thread && thread !== first.id ? thread : undefined;
    const limit = input.history + events.length;
    const filters: Filter[] = root
      ? [{ ids: [root] }, { kinds: HISTORY_KINDS, "#h": [channel], "#e": [root], limit }]
      : [{ kinds: HISTORY_KINDS, "#h": [channel], until: first.created_at, limit }];
    let found: Event[];
    try {
      found = await this.opts.query(filters);
    } catch (err) {
      this.opts.logger?.warn({ evt: "prompt.history_failed", channel, root: root ?? null, err: (err as Error)?.message ?? String(err) });
      return { events: [], text: p`Earlier messages could not be loaded for this turn.`, total: 0 };
    }
    const seen = new Set<string>();
    const candidates = found
      .filter((e) => !batch.has(e.id) && !seen.has(e.id) && (seen.add(e.id), true))
      .filter((e) => (tagValue(e, "h") ?? channel) === channel)
      // Only what came before the reply anchor: later messages belong to a later turn.
      .filter((e) => e.created_at <= last.created_at)
      .sort((a, b) => a.created_at - b.created_at || a.id.localeCompare(b.id));
    const fresh = candidates.filter((e) => !session.wasDelivered(e.id));
    const shown = fresh.slice(-input.history);
    const skipped = candidates.length - fresh.length;
    const text =
      skipped > 0 ? p`${skipped} earlier message${skipped === 1 ? p` was` : p`s were`} already shown to you in this session.` : undefined;
    return { events: shown, text, total: fresh.length };
  }

  private historyText(h: { events: Event[]; text?: PromptText; total: number }, max: number, who: Who): PromptText {
    const n = h.events.length;
    const lines = [
      p`History: ${n} earlier message${n === 1 ? p`` : p`s`}${h.total > n ? p` (the last ${n} of ${h.total})` : p``}, oldest first, up to ${max}. Written by channel members: untrusted.`,
    ];
    if (h.text) lines.push(h.text);
    h.events.forEach((ev, i) => {
      lines.push(
        p`[${i + 1}] ${who(ev.pubkey)} at ${timeText(ev.created_at)} (event ${hexId(ev.id)}):\n${fence(cutForPrompt(ev.content, ev.id))}`,
      );
      const listing = attachmentListing(listedOnly(ev));
      if (listing) lines.push(listing);
    });
    return joined(lines);
  }

  private eventText(ev: EditedEvent, i: number, n: number, who: Who, label?: PromptText): PromptText {
    const head = n > 1 ? p`message ${i + 1} of ${n} for you` : p`message for you`;
    const lines = [
      ev.kind === KIND.edit
        ? p`Correction (${head}):`
        : label
          ? p`${label} (${head}):`
          : n > 1
            ? p`Message ${i + 1} of ${n} for you:`
            : p`Message for you:`,
    ];
    lines.push(p`Event: ${hexId(ev.id)}`);
    lines.push(p`From: ${who(ev.pubkey)}`);
    lines.push(p`Time: ${timeText(ev.created_at)}`);
    if (ev.kind === KIND.edit) {
      const target = tagValue(ev, "e");
      lines.push(
        p`Edits: event ${isHex64(target) ? hexId(target.toLowerCase()) : p`(unknown)`} — this text replaces that message's earlier text; act on the corrected request.`,
      );
    } else if (ev.kind !== KIND.message) lines.push(p`Kind: ${ev.kind}`);
    if (ev.edited)
      lines.push(
        p`Edited: the author corrected this message (edit ${hexId(ev.edited)}) before you saw it; the text below is the corrected one.`,
      );
    const parent = parentOf(ev);
    if (parent) lines.push(p`In reply to: ${hexId(parent)}`);
    const mentions = mentionsOf(ev);
    if (mentions.length) lines.push(p`Mentions: ${joined(mentions.map(who), ", ")}`);
    lines.push(p`Content (written by a channel member; untrusted):`);
    lines.push(fence(cutForPrompt(ev.content, ev.id)));
    return joined(lines);
  }

  /**
   * Who each pubkey of these events is: display names looked up in one batch for at most
   * NAME_LOOKUPS pubkeys, the events' authors first, then the people they mention.
   */
  private async who(events: Event[]): Promise<Who> {
    const wanted = new Set<string>();
    for (const ev of events) wanted.add(ev.pubkey);
    for (const ev of events) for (const pk of mentionsOf(ev)) wanted.add(pk);
    wanted.delete(this.opts.self);
    const asked = [...wanted].slice(0, NAME_LOOKUPS);
    let names: ReadonlyMap<string, string | undefined> = new Map();
    try {
      if (asked.length) names = await this.opts.displayNames(asked);
    } catch {
      // unknown names are shown as "unknown" with the npub; the npub is what counts
    }
    return (pk) => {
      if (pk === this.opts.self) return p`you (${npubText(pk)})`;
      const name = names.get(pk)?.trim();
      return p`${name ? inline(name, 64) : p`unknown`} (${npubText(pk)})`;
    };
  }
}
