/**
 * "Still working" (docs/conversations.md "Still working"): when a turn runs past
 * `progress.after`, the thread gets one short note naming what the agent is doing — its
 * last tool call (by default its kind and name only, the whole title with `tool_titles: full`:
 * public-title.ts), redacted (redact-title.ts) and capped — edited in place (kind
 * 40003) as the turn goes on, at most once per 15 s and only when the title changed, and
 * deleted when the turn ends (the answer, or the failure notice, then stands alone). The
 * edits are low-priority frames: dropped rather than queued when the frame budget is short.
 * The note is marked as no answer, so a turn that runs again after a crash does not take
 * it for its reply. A turn that has heard nothing from the model yet (no text, thought, tool
 * call, plan or usage) gets no note: it is not working on anything, and a provider that
 * refuses the key should end it with its own notice alone (docs/agents.md).
 */
import type * as acp from "@agentclientprotocol/sdk/unstable";
import type { Event } from "nostr-tools";
import type { Logger } from "../base/log.js";
import { nowSec } from "../base/time.js";
import { message, PROGRESS_TAG, type ThreadRef } from "../nostr/events.js";
import { KIND } from "../nostr/kinds.js";
import type { TurnPublisher } from "./ports.js";
import { publicTitle, type ToolTitles } from "./public-title.js";

/** Edits of one note at most this often. */
export const PROGRESS_EDIT_EVERY_MS = 15_000;

export interface ProgressNoteOptions {
  /** `progress.after`; false: no note. */
  afterMs: number | false;
  channel: string;
  thread: ThreadRef;
  /** The daemon's own publisher: the note is not the turn's reply. */
  out: TurnPublisher;
  /** What a title may show the channel. */
  redact(title: string): string;
  /** The channel's `tool_titles`; default brief. */
  titles?: ToolTitles;
  editEveryMs?: number;
  logger: Logger;
}

/** Session updates that mean the model has answered during the turn. */
const MODEL_UPDATES = new Set<string>([
  "agent_message_chunk",
  "agent_thought_chunk",
  "tool_call",
  "tool_call_update",
  "plan",
  "usage_update",
]);

export class ProgressNote {
  private timer: NodeJS.Timeout | undefined;
  private editTimer: NodeJS.Timeout | undefined;
  private note: Event | undefined;
  private posting: Promise<void> | undefined;
  private title: string | undefined;
  private shown: string | undefined;
  private lastEdit = 0;
  private ended = false;
  /** The model answered something this turn. */
  private heard = false;
  /** The delay passed before the model answered anything: post on its first word. */
  private due = false;

  constructor(private readonly o: ProgressNoteOptions) {}

  start(): void {
    if (this.o.afterMs === false || this.timer) return;
    this.timer = setTimeout(() => {
      if (this.heard) this.posting = this.post();
      else this.due = true;
    }, this.o.afterMs);
    this.timer.unref();
  }

  /** A session update of the turn: a tool call's title is what the agent is doing now. */
  observe(update: acp.SessionUpdate): void {
    // The title first: a note due before the model's first word, posted on it, names the tool call that word is.
    const title =
      update.sessionUpdate === "tool_call" || update.sessionUpdate === "tool_call_update"
        ? publicTitle(update, this.o.titles ?? "brief", this.o.redact)
        : undefined;
    if (title) this.title = title;
    if (!this.heard && MODEL_UPDATES.has(update.sessionUpdate)) {
      this.heard = true;
      if (this.due && !this.ended) this.posting = this.post();
    }
    if (title && this.note) this.scheduleEdit();
  }

  /** The turn is over: no note, or the note deleted. */
  async finish(): Promise<void> {
    this.ended = true;
    clearTimeout(this.timer);
    clearTimeout(this.editTimer);
    await this.posting;
    const note = this.note;
    if (!note) return;
    this.note = undefined;
    await this.o.out
      .publish({
        kind: KIND.deletion,
        created_at: nowSec(),
        content: "",
        tags: [
          ["e", note.id],
          ["k", String(note.kind)],
          ["h", this.o.channel],
        ],
      })
      .catch(() => null);
  }

  private text(): string {
    return this.title ? `Still working on this — now: ${this.title}` : "Still working on this…";
  }

  private async post(): Promise<void> {
    if (this.ended) return;
    const text = this.text();
    const ev = await this.o.out
      .publish(message(this.o.channel, text, { thread: this.o.thread, extraTags: [[...PROGRESS_TAG]] }))
      .catch(() => null);
    if (!ev) return;
    this.note = ev;
    this.shown = text;
    this.lastEdit = Date.now();
    this.o.logger.debug({ evt: "turn.progress_note", note: ev.id }, "still-working note posted");
    // The title may have changed while the note was on its way.
    this.scheduleEdit();
  }

  /** One edit when the text changed, no sooner than the edit interval after the last. */
  private scheduleEdit(): void {
    if (this.ended || this.editTimer || this.text() === this.shown) return;
    const wait = Math.max(0, this.lastEdit + (this.o.editEveryMs ?? PROGRESS_EDIT_EVERY_MS) - Date.now());
    this.editTimer = setTimeout(() => {
      this.editTimer = undefined;
      const note = this.note;
      const text = this.text();
      if (this.ended || !note || text === this.shown) return;
      this.shown = text;
      this.lastEdit = Date.now();
      this.o.out.signal({
        kind: KIND.edit,
        created_at: nowSec(),
        content: text,
        tags: [
          ["h", this.o.channel],
          ["e", note.id],
        ],
      });
    }, wait);
    this.editTimer.unref();
  }
}
