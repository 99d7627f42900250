/**
 * A channel read live, one line per event, for a person at a terminal (`buzz-bridge tail`,
 * `demo --keep`): messages, reactions and the owner commands' kind 40099 outcomes, with
 * channels by name and people by their kind 0 profile's name (a short npub when they have
 * none). Reactions show what they react to, so 👀 → ✅ on a
 * mention reads as the turn it is, and `!status` is seen to be answered.
 *
 * Reactions are matched by the channel's `h` tag: the bridge tags all of its own (👀, ✅,
 * ⚠️, 🔒); a client that leaves the tag off a reaction is not shown.
 */
import type { Event } from "nostr-tools";
import { KIND } from "../nostr/kinds.js";
import { reactionTarget, threadRootOf } from "../nostr/events.js";
import { shortNpub, type Profile } from "./profiles.js";
import { ChannelFollower } from "./follow.js";
import type { ChannelDirectory, ChannelInfo } from "./directory.js";
import type { EventContext, RelayClient } from "../relay/client.js";
import { tagValue, tagValues } from "../base/tags.js";
import { BoundedMap } from "../base/bounded-map.js";

const TAIL_KINDS = [KIND.message, KIND.reaction, KIND.system];

export interface TailOptions {
  /** Channel id → name, for the lines' `#name`; kept current while following a directory. */
  channels: Map<string, string>;
  /** Display names for pubkeys (the relay's kind 0 profiles). */
  names: (pubkeys: string[]) => Promise<Map<string, Profile>>;
  out: NodeJS.WritableStream;
}

/**
 * A kind 40099 outcome in words: `control.status (ok) by alice — 1 turn in flight, 2 events
 * queued`. An outcome that carries its own sentence (`text`) is shown by it alone: its other
 * fields are the same figures for scripts. Otherwise each plain field is listed.
 */
export function describeSystem(e: Pick<Event, "content">, name: (pk: string) => string): string {
  try {
    const p = JSON.parse(e.content) as { type?: string; actor?: string; outcome?: string; text?: unknown; [k: string]: unknown };
    const extra =
      typeof p.text === "string" && p.text.trim()
        ? [p.text.trim()]
        : Object.entries(p)
            .filter(
              ([k, v]) =>
                !["type", "actor", "outcome", "target"].includes(k) &&
                (typeof v === "string" || typeof v === "number" || typeof v === "boolean"),
            )
            .map(([k, v]) => `${k} ${String(v)}`);
    return `${p.type ?? "system"}${p.outcome ? ` (${p.outcome})` : ""}${p.actor ? ` by ${name(p.actor)}` : ""}${extra.length ? ` — ${extra.join(", ")}` : ""}`;
  } catch {
    return e.content;
  }
}

const time = (ts: number) => new Date(ts * 1000).toISOString().slice(11, 19);
const snippet = (text: string, n = 60) => {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
};

/** Formats events as they arrive; remembers recent messages so a reaction can say what it is on. */
class TailFormatter {
  private readonly recent = new BoundedMap<string, { author: string; text: string }>(1000);

  constructor(private readonly o: TailOptions) {}

  async line(ev: Event): Promise<string> {
    const channelId = tagValue(ev, "h") ?? "";
    const room = `#${this.o.channels.get(channelId) ?? channelId.slice(0, 8)}`;
    const target = ev.kind === KIND.reaction ? reactionTarget(ev) : undefined;
    const mentions = ev.kind === KIND.message ? [...new Set(tagValues(ev, "p"))] : [];
    const pks = [ev.pubkey, ...mentions];
    if (ev.kind === KIND.system) {
      try {
        const actor = (JSON.parse(ev.content) as { actor?: unknown }).actor;
        if (typeof actor === "string") pks.push(actor);
      } catch {
        /* not JSON: shown as is */
      }
    }
    const names = await this.o.names(pks);
    const name = (pk: string) => names.get(pk)?.displayName ?? shortNpub(pk);
    const head = `${time(ev.created_at)} ${room}`;
    if (ev.kind === KIND.message) {
      const root = threadRootOf(ev);
      this.remember(ev.id, name(ev.pubkey), ev.content);
      const where =
        root === ev.id ? "" : ` ↳ ${this.recent.has(root) ? `${this.recent.get(root)!.author}'s thread` : `thread ${root.slice(0, 8)}`}`;
      // The p tags, not the text, are what make a mention: shown so an untagged "@agent" stands out.
      const tagged = mentions.length ? `  → ${mentions.map((pk) => `@${name(pk)}`).join(" ")}` : "";
      return `${head}${where}  ${name(ev.pubkey)}: ${ev.content.replace(/\n/g, "\n    ")}${tagged}`;
    }
    if (ev.kind === KIND.reaction) {
      const on = target && this.recent.get(target);
      const what = on ? `${on.author}: "${snippet(on.text)}"` : `event ${target?.slice(0, 8) ?? "?"}`;
      return `${head}  ${name(ev.pubkey)} reacted ${ev.content} to ${what}`;
    }
    return `${head}  · ${describeSystem(ev, name)}`;
  }

  private remember(id: string, author: string, text: string): void {
    this.recent.set(id, { author, text });
  }
}

/** What an event is printed after when both are in one replay: a reaction's target, a reply's thread root. */
const printedAfter = (ev: Event): string | undefined =>
  ev.kind === KIND.reaction ? reactionTarget(ev) : ev.kind === KIND.message ? threadRootOf(ev) : undefined;

/**
 * The order to print a replay in: oldest first. `created_at` counts seconds, so a mention, the
 * reply to it and the reactions on it often share one, and within a second a relay orders by
 * id (NIP-01), not by arrival. So the relay's newest-first order is reversed (right where a
 * relay keeps arrival order), and no event comes before the message it replies in the thread
 * of or reacts to when that message is in the replay too (else the reply reads
 * "↳ thread 1a2b3c4d" where "olivia's thread" was meant).
 */
export function replayOrder(events: readonly Event[]): Event[] {
  const byTime = [...events].reverse().sort((a, b) => a.created_at - b.created_at);
  const pending = new Map(byTime.map((ev) => [ev.id, ev]));
  const out: Event[] = [];
  for (const ev of byTime) {
    // The event and what it waits on, newest first; each taken once, so a cycle of forged refs ends.
    const chain: Event[] = [];
    for (let e: Event | undefined = ev; e && pending.delete(e.id); e = pending.get(printedAfter(e) ?? "")) chain.push(e);
    out.push(...chain.reverse());
  }
  return out;
}

/**
 * Subscribes `client` to the channels (every message, not only mentions) and writes a line
 * per event until `stop` resolves. What the relay replays from before the subscription is
 * printed oldest first (`replayOrder`), or skipped with `skipReplay` (the demo
 * has printed its transcript already); live events follow in arrival order.
 *
 * With `follow`, the channel set follows the identity's memberships as they change: it starts
 * from the directory's list (discovered by the caller) and a channel the identity is added to
 * (and `follow.select` admits) is followed from then on, one it is removed from is dropped,
 * each said in a line of its own.
 */
export async function followChannels(
  client: RelayClient,
  o: TailOptions & { skipReplay?: boolean; follow?: { directory: ChannelDirectory; select: (ch: ChannelInfo) => boolean } },
  stop: Promise<unknown>,
): Promise<void> {
  const fmt = new TailFormatter(o);
  let chain = Promise.resolve();
  const write = (line: string | (() => Promise<string>)) => {
    chain = chain
      .then(async () => {
        o.out.write(`${typeof line === "string" ? line : await line()}\n`);
      })
      .catch(() => undefined);
  };
  const print = (ev: Event) => write(() => fmt.line(ev));
  let replay: Event[] | undefined = [];
  const flush = () => {
    const held = replay ?? [];
    replay = undefined;
    if (!o.skipReplay) for (const ev of replayOrder(held)) print(ev);
  };
  const onEvent = (ev: Event, ctx: EventContext) => {
    if (replay && !ctx.live) return void replay.push(ev);
    if (replay) flush();
    print(ev);
  };
  client.on("event", onEvent);
  const how = { kinds: TAIL_KINDS, requireMention: false };
  let follower: ChannelFollower | undefined;
  const f = o.follow;
  const now = () => time(Math.floor(Date.now() / 1000));
  const onJoined = (ch: ChannelInfo) => {
    // A channel the caller's discovery listed may still be announced by its notification.
    if (!f?.select(ch) || o.channels.has(ch.id)) return;
    o.channels.set(ch.id, ch.name);
    write(`${now()} #${ch.name}  · added to #${ch.name} (${ch.id}); following it`);
  };
  const onLeft = (id: string) => {
    const name = o.channels.get(id);
    if (name === undefined) return;
    o.channels.delete(id);
    write(`${now()} #${name}  · removed from #${name} (${id}); no longer following it`);
  };
  if (f) {
    // The follower subscribes first (its listeners were added first), then the line is written.
    // The directory has discovered already: a second discovery would take in a channel joined
    // since without a line for it.
    follower = new ChannelFollower(client, f.directory, (ch) => (f.select(ch) ? how : undefined));
    f.directory.on("joined", onJoined);
    f.directory.on("left", onLeft);
    follower.follow(f.directory.list());
  } else {
    client.setChannels([...o.channels.keys()].map((id) => ({ id, ...how })));
  }
  void client.waitSubscribed(30_000).then(() => replay && flush());
  try {
    await stop;
  } finally {
    client.off("event", onEvent);
    f?.directory.off("joined", onJoined);
    f?.directory.off("left", onLeft);
    follower?.stop();
    await chain;
  }
}
