/**
 * The agent's public work status in a channel (NIP-AW, kind 30181, `d` = `h` = the channel;
 * docs/protocol.md §4): what it is doing, readable by the channel's members and nobody else,
 * so people see it without reading logs. One addressable snapshot per channel: `working`
 * with the model, the turn and at most 20 redacted tool titles while turns run, replaced by
 * a `complete` or `error` snapshot with no activity when the channel's last turn ends.
 * A tool's entry is its kind and name unless the channel opts in to full titles
 * (`tool_titles`, public-title.ts).
 *
 * Cadence (NIP-AW's publisher behaviour): at once when a channel starts working and when it
 * stops, otherwise at most once every 5 s per channel. Snapshots are queued behind replies
 * in the frame budget, and a lost one is never retried: the next replaces it. Turned off
 * per channel with `work_status: off`.
 */
import type { EventTemplate } from "nostr-tools";
import type { Logger } from "../base/log.js";
import { KIND } from "../nostr/kinds.js";
import { nowSec } from "../base/time.js";
import { redactTitle, type RedactOptions } from "./redact-title.js";
import { publicTitle, type ToolCallView, type ToolTitles } from "./public-title.js";

/** NIP-AW's reference bounds. */
const MAX_ACTIVITY = 20;
const REPUBLISH_MS = 5000;

/** The part of an ACP session update the status reads (tool calls and streamed text). */
export interface StatusUpdate extends ToolCallView {
  sessionUpdate: string;
  toolCallId?: string;
  status?: string | null;
}

interface Activity {
  at: string;
  kind: "tool" | "message" | "lifecycle";
  title: string;
  status: "running" | "complete";
}

interface TurnEntry {
  turnId: string;
  model: string | undefined;
  startedAt: string;
  titles: ToolTitles;
  tools: Map<string, Activity>;
  message: Activity | undefined;
}

interface ChannelState {
  turns: Map<string, TurnEntry>;
  lastAt: number;
  timer: NodeJS.Timeout | undefined;
  /** The latest turn to start here: its model and id head the snapshot. */
  head: TurnEntry | undefined;
}

export interface WorkStatusOptions {
  /** Queues a snapshot for the relay; never awaited, never fails a turn. */
  publish(t: EventTemplate): void;
  redact: RedactOptions;
  logger?: Logger;
  now?: () => number;
}

/** The handle a running turn reports through. */
export interface TurnStatus {
  update(u: StatusUpdate): void;
  /** The turn is over: `error` for a failure, `complete` otherwise (cancellations included). */
  end(outcome: "complete" | "error", stopReason?: string): void;
}

const iso = (ms: number) => new Date(ms).toISOString();

export class WorkStatusBoard {
  private readonly channels = new Map<string, ChannelState>();
  /**
   * The last snapshot's created_at per channel: each next one is later, so the relay (which
   * keeps the newest, and of two in one second the lower id) never keeps an older one.
   */
  private readonly clock = new Map<string, number>();
  private readonly now: () => number;
  readonly metrics = { published: 0 };

  constructor(private readonly o: WorkStatusOptions) {
    this.now = o.now ?? Date.now;
  }

  /** A turn starts in `channel`: the channel's status says so at once if it was idle. */
  begin(channel: string, turn: { turnId: string; model?: string; titles?: ToolTitles }): TurnStatus {
    let ch = this.channels.get(channel);
    if (!ch) this.channels.set(channel, (ch = { turns: new Map(), lastAt: 0, timer: undefined, head: undefined }));
    const entry: TurnEntry = {
      turnId: turn.turnId,
      model: turn.model,
      startedAt: iso(this.now()),
      titles: turn.titles ?? "brief",
      tools: new Map(),
      message: undefined,
    };
    const wasIdle = ch.turns.size === 0;
    ch.turns.set(turn.turnId, entry);
    ch.head = entry;
    const state = ch;
    if (wasIdle) this.publishNow(channel, state);
    else this.touch(channel, state);
    let ended = false;
    return {
      update: (u) => {
        if (ended || !this.apply(entry, u)) return;
        this.touch(channel, state);
      },
      end: (outcome, stopReason) => {
        if (ended) return;
        ended = true;
        state.turns.delete(entry.turnId);
        if (state.head === entry) state.head = [...state.turns.values()].at(-1);
        if (state.turns.size > 0) return this.touch(channel, state);
        // The channel's last turn: the activity is cleared, at once.
        clearTimeout(state.timer);
        state.timer = undefined;
        this.channels.delete(channel);
        this.emit(channel, {
          status: outcome,
          model: entry.model,
          turnId: entry.turnId,
          turnStartedAt: entry.startedAt,
          completedAt: iso(this.now()),
          ...(stopReason ? { stopReason } : {}),
          activity: [],
        });
      },
    };
  }

  /** Folds an update into the turn's activity; true when the snapshot changed. */
  private apply(entry: TurnEntry, u: StatusUpdate): boolean {
    const at = iso(this.now());
    if (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") {
      if (!u.toolCallId) return false;
      const prev = entry.tools.get(u.toolCallId);
      const title = publicTitle(u, entry.titles, (t) => redactTitle(t, this.o.redact)) ?? prev?.title;
      const done = u.status === "completed" || u.status === "failed";
      const status: Activity["status"] = done ? "complete" : (prev?.status ?? "running");
      if (!title) return false;
      if (prev && prev.title === title && prev.status === status) return false;
      entry.tools.delete(u.toolCallId); // re-inserted: the map's order is the order of last change
      entry.tools.set(u.toolCallId, { at, kind: "tool", title, status });
      while (entry.tools.size > MAX_ACTIVITY) entry.tools.delete(entry.tools.keys().next().value!);
      if (entry.message) entry.message.status = "complete";
      return true;
    }
    if (u.sessionUpdate === "agent_message_chunk") {
      // Streamed text is never shown: one generic entry says a reply is being written.
      if (entry.message?.status === "running") return false;
      entry.message = { at, kind: "message", title: "Writing a reply", status: "running" };
      return true;
    }
    return false;
  }

  /** Publishes now when the last snapshot is 5 s old, else once when it is. */
  private touch(channel: string, ch: ChannelState): void {
    if (ch.timer) return;
    const wait = ch.lastAt + REPUBLISH_MS - this.now();
    if (wait <= 0) return this.publishNow(channel, ch);
    ch.timer = setTimeout(() => {
      ch.timer = undefined;
      if (this.channels.get(channel) === ch) this.publishNow(channel, ch);
    }, wait);
    ch.timer.unref();
  }

  private publishNow(channel: string, ch: ChannelState): void {
    clearTimeout(ch.timer);
    ch.timer = undefined;
    ch.lastAt = this.now();
    const head = ch.head;
    const activity: Activity[] = [];
    for (const t of ch.turns.values()) {
      activity.push(...t.tools.values());
      if (t.message) activity.push(t.message);
    }
    activity.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
    this.emit(channel, {
      status: "working",
      model: head?.model,
      turnId: head?.turnId,
      turnStartedAt: head?.startedAt,
      activity: activity.slice(-MAX_ACTIVITY),
    });
  }

  private emit(channel: string, body: Record<string, unknown>): void {
    this.metrics.published++;
    const payload = { v: 1, source: "buzz-bridge", ...body, updatedAt: iso(this.now()) };
    const createdAt = Math.max(nowSec(), (this.clock.get(channel) ?? 0) + 1);
    this.clock.set(channel, createdAt);
    this.o.publish({
      kind: KIND.workStatus,
      created_at: createdAt,
      content: JSON.stringify(payload),
      tags: [
        ["h", channel],
        ["d", channel],
      ],
    });
  }
}
