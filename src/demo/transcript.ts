/**
 * Renders a channel's events as a readable chat for `buzz-bridge demo`: time, name,
 * text, replies indented under their thread root, reactions summarised under the message
 * they react to, control-command outcomes (40099) as system lines.
 */
import type { Event } from "nostr-tools";
import { KIND } from "../nostr/kinds.js";
import { threadRootOf } from "../nostr/events.js";
import { describeSystem } from "../buzz/tail.js";
import { tagValue } from "../base/tags.js";

export interface TranscriptOptions {
  names: Map<string, string>;
  /** Width the text is wrapped to (without indentation). */
  width?: number;
  /**
   * Event ids in the order they were posted, where the caller knows it: events of one
   * second (created_at has no finer grain) are listed in this order, not by id.
   */
  order?: string[];
}

const time = (ts: number) => new Date(ts * 1000).toISOString().slice(11, 19);

export function formatTranscript(events: Event[], opts: TranscriptOptions): string {
  const name = (pk: string) => opts.names.get(pk) ?? `${pk.slice(0, 8)}…`;
  const rank = new Map((opts.order ?? []).map((id, i) => [id, i]));
  const posted = (e: Event) => rank.get(e.id) ?? Number.MAX_SAFE_INTEGER;
  const byTime = [...events].sort((a, b) => a.created_at - b.created_at || posted(a) - posted(b) || a.id.localeCompare(b.id));
  const posts = byTime.filter((e) => e.kind === KIND.message || e.kind === KIND.system);
  const known = new Set(posts.map((e) => e.id));
  const reactions = new Map<string, Map<string, string[]>>();
  for (const r of byTime.filter((e) => e.kind === KIND.reaction)) {
    const target = tagValue(r, "e");
    if (!target || !known.has(target)) continue;
    const perEmoji = reactions.get(target) ?? new Map<string, string[]>();
    const who = perEmoji.get(r.content) ?? [];
    if (!who.includes(name(r.pubkey))) who.push(name(r.pubkey));
    perEmoji.set(r.content, who);
    reactions.set(target, perEmoji);
  }
  const roots = posts.filter((e) => threadRootOf(e) === e.id || !known.has(threadRootOf(e)));
  const replies = new Map<string, Event[]>();
  for (const e of posts) {
    const root = threadRootOf(e);
    if (root !== e.id && known.has(root)) replies.set(root, [...(replies.get(root) ?? []), e]);
  }
  const lines: string[] = [];
  const render = (e: Event, indent: string) => {
    const head =
      e.kind === KIND.system
        ? `${indent}${time(e.created_at)}  · ${describeSystem(e, name)}`
        : `${indent}${time(e.created_at)}  ${name(e.pubkey)}:`;
    lines.push(head);
    if (e.kind !== KIND.system) for (const l of wrap(e.content, opts.width ?? 88)) lines.push(`${indent}    ${l}`);
    const rs = reactions.get(e.id);
    if (rs)
      lines.push(
        `${indent}    ${signalOrder([...rs])
          .map(([emoji, who]) => `${emoji} ${who.join(", ")}`)
          .join("   ")}`,
      );
  };
  for (const root of roots) {
    render(root, "");
    for (const reply of replies.get(root.id) ?? []) render(reply, "    │ ");
    lines.push("");
  }
  return lines.join("\n");
}

/** A turn's reactions in the order they happen (👀 picked up, ⏳ waiting, then the result), however close in time. */
const SIGNALS = ["👀", "⏳", "✅", "⚠️"];
function signalOrder<T>(entries: Array<[string, T]>): Array<[string, T]> {
  const rank = (emoji: string) => (SIGNALS.includes(emoji) ? SIGNALS.indexOf(emoji) : -1);
  return entries
    .map((e, i) => ({ e, i }))
    .sort((a, b) => (rank(a.e[0]) >= 0 && rank(b.e[0]) >= 0 ? rank(a.e[0]) - rank(b.e[0]) : a.i - b.i))
    .map((x) => x.e);
}

function wrap(text: string, width: number): string[] {
  const out: string[] = [];
  for (const para of text.split("\n")) {
    let line = "";
    for (const word of para.split(/\s+/)) {
      if (line && line.length + word.length + 1 > width) {
        out.push(line);
        line = word;
      } else line = line ? `${line} ${word}` : word;
    }
    out.push(line);
  }
  return out;
}
