/**
 * The built-in buzz tools, daemon side: sign and publish through the daemon's one publisher
 * (relay/publisher.ts: counted and logged like every publish), strictly inside the session's channel. Anything that points outside it
 * (a reply_to, a reaction target, a thread) is refused with a message saying so.
 *
 * A relay outage is waited out, not reported: a read or a publish that fails because the
 * relay cannot be reached is tried again (the same signed event, which the relay takes
 * once) until it goes through or the turn that asked is over (`turnOver`). The relay client
 * does the trying (relay/outage.ts); the turn is its limit. An agent told "fetch failed"
 * three seconds into an outage would give up and post its error instead of its answer.
 */
import type { Event, EventTemplate } from "nostr-tools";
import { FORUM_KINDS, KIND } from "../nostr/kinds.js";
import { channelOf, messageParts, PROGRESS_TAG, reaction, replyRefFor, threadRootOf, type ReplyPlacement } from "../nostr/events.js";
import { imetaTag } from "../nostr/imeta.js";
import { DEFAULT_MESSAGE_LIMIT } from "../contract/buzz-tool-schemas.js";
import { contentTooLong, tooManyMessages } from "../contract/limits.js";
import type { BuzzToolHandlers } from "../link/index.js";
import type { BuzzToolArgs } from "../contract/buzz-tool-schemas.js";
import { tagValue, tagValues } from "../base/tags.js";
import type { Logger } from "../base/log.js";
import { isRelayOutage } from "../relay/errors.js";
import type { RelayPort } from "../relay/port.js";
import type { OutageWait } from "../relay/outage.js";

/** The channel's messages as the tools read them: chat, and a forum's posts and comments. */
const MESSAGE_KINDS = [KIND.message, ...FORUM_KINDS];

class BuzzToolError extends Error {
  override name = "BuzzToolError";
}

export interface BuzzToolsOptions {
  /** The session's channel id; the only channel these tools act in. */
  channel: string;
  relay: RelayPort;
  /** Called with every event published, so the turn knows the agent has replied. */
  onPublished?(ev: Event): void;
  /**
   * Called when a publishing tool call starts: the turn running then is told of the event
   * once published, and when the call is over either way (`release`). `admitMessage` counts
   * a send_message against the turn's allowance: false once it is spent.
   */
  bindTurn?(): TurnBinding | undefined;
  /** The most bytes one send_message's content may have (`replies.max_bytes`); default no limit. */
  maxBytes?: number;
  /**
   * send_message calls allowed while no turn is bound (`replies.max_per_turn`): an agent
   * posting between its turns is held to the same allowance, counted until a turn binds.
   */
  maxUnbound?: number;
  /** Event a send_message without reply_to answers (the turn's mention); default none = top-level. */
  defaultReplyTo?(): string | undefined;
  /** The channel is a forum: a top-level message is a post (45001). */
  forum?(): boolean;
  /** The agent's own pubkey (hex): a reply to its own message gets no `p` to itself. */
  self?: string;
  /** The channel's `reply_placement`: flat answers to top-level messages go top-level; default thread. */
  placement?(): ReplyPlacement;
  /** The largest file a reply may attach (`attachments.max_bytes`). */
  maxAttachmentBytes?(): number;
  /**
   * Aborted when the turn running now is over (ended, cancelled, past max_turn): how long
   * a tool call may wait out a relay outage. Undefined (no turn): an outage fails the call.
   */
  turnOver?(): AbortSignal | undefined;
  logger?: Logger;
}

export interface TurnBinding {
  publishing?(ev: Event): Promise<void>;
  published(ev: Event): void;
  release(): void;
  /** Counts one send_message against the turn's allowance; false (and not counted) once it is spent. */
  admitMessage?(): { ok: true } | { ok: false; max: number };
  /** Why the turn was stopped (the owner's `!cancel`, a deletion, shutdown), once it was: nothing more is posted for it. */
  stopped?(): string | undefined;
  /**
   * Holds a send_message's publish for a gate's approval (`hold_replies`): returns what the
   * agent is told, or undefined when the turn's posts are not held.
   */
  hold?(post: () => Promise<unknown>): string | undefined;
}

const OK_STATUSES = new Set(["accepted", "duplicate"]);
/** Publish outcomes that mean the relay was not there to answer. */
const OUTAGE_STATUSES = new Set(["disconnected", "timeout"]);

function summary(ev: Event) {
  const root = threadRootOf(ev);
  return {
    id: ev.id,
    author: ev.pubkey,
    created_at: ev.created_at,
    content: ev.content,
    ...(root !== ev.id ? { thread_root: root } : {}),
  };
}

export function createBuzzTools(opts: BuzzToolsOptions): BuzzToolHandlers {
  const { channel } = opts;
  /** send_message calls since the last one a turn was bound to (see maxUnbound). */
  let unbound = 0;

  /** A call with no turn bound counts against maxUnbound; one with a turn starts that count over. */
  const admitUnbound = (turn: TurnBinding | undefined): { ok: true } | { ok: false; max: number } => {
    if (turn) {
      unbound = 0;
      return { ok: true };
    }
    if (opts.maxUnbound !== undefined && unbound >= opts.maxUnbound) return { ok: false, max: opts.maxUnbound };
    unbound++;
    return { ok: true };
  };

  /**
   * The wait a call may spend on a relay outage: its turn (`turnOver`), kept by the relay
   * client's own retries. `link.relay_wait` and `link.relay_back` bracket the wait.
   */
  const outageWait = (tool: string) => {
    const until = opts.turnOver?.();
    let since: number | undefined;
    const wait: OutageWait | undefined = until && {
      until,
      onOutage: (reason) => {
        if (since !== undefined) return;
        since = Date.now();
        opts.logger?.warn(
          { evt: "link.relay_wait", tool, reason },
          "the relay cannot be reached; the tool call waits for it (bounded by the turn)",
        );
      },
    };
    /** The call is over: `reason` when it ended on an outage still. */
    const over = (reason: string | undefined) => {
      if (since === undefined) return;
      opts.logger?.info(
        { evt: "link.relay_back", tool, waited_ms: Date.now() - since, ok: !reason },
        reason ? "gave up waiting for the relay: the turn is over" : "the relay answered again",
      );
    };
    return { wait, over, waited: () => since !== undefined };
  };

  const relay: Pick<RelayPort, "query"> & { publish(ev: Event): Promise<{ status: string; reason?: string }> } = {
    async query(filters) {
      const w = outageWait("read");
      try {
        const events = await opts.relay.query(filters, w.wait);
        w.over(undefined);
        return events;
      } catch (err) {
        const reason = isRelayOutage(err) ? (err as Error).message : undefined;
        w.over(reason);
        if (reason && w.waited()) throw new BuzzToolError(`read: the relay was unreachable until the turn ended (${reason})`);
        throw err;
      }
    },
    async publish(ev) {
      const w = outageWait("publish");
      const out = await opts.relay.publish(ev, w.wait);
      w.over(OUTAGE_STATUSES.has(out.status) ? `${out.status}${out.reason ? `: ${out.reason}` : ""}` : undefined);
      return out;
    },
  };

  /** Fetches an event and proves it belongs to this channel. */
  const inChannel = async (id: string, what: string): Promise<Event> => {
    const [ev] = await relay.query([{ ids: [id], limit: 1 }]);
    if (!ev) throw new BuzzToolError(`${what} ${id} not found in this channel`);
    if (channelOf(ev) !== channel)
      throw new BuzzToolError(`${what} ${id} is not in this session's channel; these tools act only in channel ${channel}`);
    return ev;
  };

  /** Uploads a reply's files before anything is published: a file the relay refuses fails the call, not half a reply. */
  const uploadFiles = async (files: NonNullable<BuzzToolArgs["send_message"]["files"]>) => {
    if (!files.length) return [];
    const upload = opts.relay.upload;
    if (!upload) throw new BuzzToolError("this bridge cannot attach files (no media endpoint)");
    const max = opts.maxAttachmentBytes?.() ?? Number.POSITIVE_INFINITY;
    const out = [];
    for (const f of files) {
      const bytes = Buffer.from(f.data, "base64");
      if (bytes.length > max)
        throw new BuzzToolError(`attachment ${f.name} is ${bytes.length} bytes, more than the ${max} allowed (attachments.max_bytes)`);
      const stored = await upload.call(opts.relay, bytes, f.mime).catch((err: unknown) => {
        throw new BuzzToolError(`attachment ${f.name} could not be uploaded: ${(err as Error).message}`);
      });
      out.push({ ...stored, mime: stored.type, name: f.name, alt: f.alt });
    }
    return out;
  };

  /**
   * Publishes the templates in order (a long message's parts); the first event's id answers.
   * `turn`: the binding the call already took (send_message binds before it checks its allowance).
   */
  const publish = async (
    templates: EventTemplate | EventTemplate[] | (() => EventTemplate | EventTemplate[] | Promise<EventTemplate | EventTemplate[]>),
    what: string,
    turn: TurnBinding | undefined = opts.bindTurn?.(),
  ): Promise<{ event_id: string; parts?: string[] }> => {
    // Bound before the wait: a publish that completes late (a reconnect) still counts for
    // the turn that asked for it, and that turn knows a publish is still on its way.
    let list: EventTemplate[];
    try {
      const made = typeof templates === "function" ? await templates() : templates;
      list = Array.isArray(made) ? made : [made];
    } catch (err) {
      turn?.release();
      throw err;
    }
    const ids: string[] = [];
    try {
      for (const [i, template] of list.entries()) {
        const ev = opts.relay.sign(template);
        await turn?.publishing?.(ev);
        const out = await relay.publish(ev);
        const part = list.length > 1 ? ` (part ${i + 1} of ${list.length}; ${i} published before it)` : "";
        if (!OK_STATUSES.has(out.status))
          throw new BuzzToolError(`${what} not published${part}: ${out.status}${out.reason ? ` (${out.reason})` : ""}`);
        turn?.published(ev);
        opts.onPublished?.(ev);
        ids.push(ev.id);
      }
      return list.length > 1 ? { event_id: ids[0]!, parts: ids } : { event_id: ids[0]! };
    } finally {
      turn?.release();
    }
  };

  return {
    async sendMessage(a) {
      // Checked before anything is fetched, signed or split: an oversized message or a flood
      // costs the daemon nothing but this refusal.
      const bytes = Buffer.byteLength(a.content, "utf8");
      if (opts.maxBytes !== undefined && bytes > opts.maxBytes) throw new BuzzToolError(contentTooLong(bytes, opts.maxBytes));
      const turn = opts.bindTurn?.();
      // An agent may still be finishing a step when its turn is stopped: what it sends then
      // would reach the channel after the owner said stop.
      const stopped = turn?.stopped?.();
      if (stopped) {
        turn!.release();
        throw new BuzzToolError(`this turn was stopped (${stopped}): nothing more is posted for it`);
      }
      const admitted = turn?.admitMessage?.() ?? admitUnbound(turn);
      if (!admitted.ok) {
        turn?.release();
        throw new BuzzToolError(tooManyMessages(admitted.max));
      }
      let files: Awaited<ReturnType<typeof uploadFiles>> = [];
      const templates = async () => {
        const replyTo = a.reply_to ?? opts.defaultReplyTo?.();
        const target = replyTo ? await inChannel(replyTo, "reply_to event") : undefined;
        const thread = target ? replyRefFor(target, opts.placement?.()) : undefined;
        // A reply names the person it answers (a p tag): that is what puts it in their
        // Mentions feed and notifications in Buzz Desktop (docs/protocol.md §4).
        const asker = target && target.pubkey !== opts.self ? [target.pubkey] : [];
        const mentions = [...asker, ...(a.mentions ?? [])];
        files = await uploadFiles(a.files ?? []);
        // NIP-92: the files' urls are in the text too, for clients that do not read imeta.
        const content = files.length ? `${a.content}\n\n${files.map((f) => f.url).join("\n")}` : a.content;
        // A progress note is marked on the wire: the turn and a later restart tell it from the answer by that mark.
        const extraTags = a.progress ? [[...PROGRESS_TAG]] : undefined;
        const parts = messageParts(
          channel,
          content,
          { thread, mentions, extraTags, forumPost: opts.forum?.() },
          opts.relay.contentLimit?.(),
        );
        parts[parts.length - 1]!.tags.push(...files.map((f) => imetaTag(f)));
        return parts;
      };
      // Held for a gate's approval: published (bound to the same turn) once the gate allows
      // the turn to end. The call itself is over now, so the turn does not wait on it as in flight.
      const queued = turn?.hold?.(() => publish(templates, "message", turn));
      if (queued) {
        turn!.release();
        return { event_id: "", queued };
      }
      const sent = await publish(templates, "message", turn);
      return files.length
        ? { ...sent, attachments: files.map((f) => ({ name: f.name, url: f.url, sha256: f.sha256, size: f.size })) }
        : sent;
    },
    async addReaction(a) {
      const target = await inChannel(a.event_id, "event");
      return publish(reaction(target, a.emoji, channel), "reaction");
    },
    async getMessages(a) {
      const limit = a.limit ?? DEFAULT_MESSAGE_LIMIT;
      const events = await relay.query([{ kinds: MESSAGE_KINDS, "#h": [channel], limit }]);
      return events
        .filter((e) => channelOf(e) === channel)
        .sort((x, y) => y.created_at - x.created_at)
        .slice(0, limit)
        .map(summary);
    },
    async getThread(a) {
      const ev = await inChannel(a.event_id, "event");
      const rootId = threadRootOf(ev);
      const events = await relay.query([
        { ids: [rootId], limit: 1 },
        { kinds: MESSAGE_KINDS, "#h": [channel], "#e": [rootId], limit: 500 },
      ]);
      const seen = new Set<string>();
      const thread = events
        .filter((e) => channelOf(e) === channel && !seen.has(e.id) && seen.add(e.id))
        .sort((x, y) => (x.id === rootId ? -1 : y.id === rootId ? 1 : x.created_at - y.created_at));
      return { root: rootId, messages: thread.map(summary) };
    },
    async getChannel() {
      const events = await relay.query([{ kinds: [KIND.groupMetadata, KIND.groupMembers], "#d": [channel], limit: 10 }]);
      const latest = (kind: number) => events.filter((e) => e.kind === kind).sort((x, y) => y.created_at - x.created_at)[0];
      const meta = latest(KIND.groupMetadata);
      const members = latest(KIND.groupMembers);
      return {
        id: channel,
        name: meta && tagValue(meta, "name"),
        about: meta && tagValue(meta, "about"),
        members: members ? tagValues(members, "p") : [],
      };
    },
  };
}
