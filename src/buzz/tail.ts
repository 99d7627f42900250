/**
 * A channel read live, one line per event, for a person at a terminal (`buzz-bridge tail`,
 * `demo --keep`): messages, reactions and the owner commands' kind 40099 outcomes, with
 * authors and channels by name. Reactions show what they react to, so 👀 → ✅ on a
 * mention reads as the turn it is, and `!status` is seen to be answered.
 *
 * Reactions are matched by the channel's `h` tag: the bridge tags all of its own (👀, ✅,
 * ⚠️, 🔒); a client that leaves the tag off a reaction is not shown.
 */
import type { Event } from "nostr-tools";
import { KIND } from "../nostr/kinds.js";
import { reactionTarget, threadRootOf } from "../nostr/events.js";
import type { Profile } from "./profiles.js";
import type { EventContext, RelayClient } from "../relay/client.js";
import { tagValue, tagValues } from "../base/tags.js";
import { BoundedMap } from "../base/bounded-map.js";

const TAIL_KINDS = [KIND.message, KIND.reaction, KIND.system];

export interface TailOptions {
  /** Channel id → name, for the lines' `#name`. */
  channels: Map<string, string>;
  /** Display names for pubkeys (the relay's kind 0 profiles). */
  names: (pubkeys: string[]) => Promise<Map<string, Profile>>;
  out: NodeJS.WritableStream;
}

/** A kind 40099 outcome in words: `control.status (ok) by alice — inFlight 0, queued 2`. */
export function describeSystem(e: Pick<Event, "content">, name: (pk: string) => string): string {
  try {
    const p = JSON.parse(e.content) as { type?: string; actor?: string; outcome?: string; [k: string]: unknown };
    const extra = Object.entries(p)
      .filter(
        ([k, v]) =>
          !["type", "actor", "outcome", "target"].includes(k) && (typeof v === "string" || typeof v === "number" || typeof v === "boolean"),
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
    const name = (pk: string) => names.get(pk)?.displayName ?? `${pk.slice(0, 8)}…`;
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

/**
 * Subscribes `client` to the channels (every message, not only mentions) and writes a line
 * per event until `stop` resolves. What the relay replays from before the subscription is
 * printed oldest first (relays replay newest first), or skipped with `skipReplay` (the demo
 * has printed its transcript already); live events follow in arrival order.
 */
export async function followChannels(
  client: RelayClient,
  o: TailOptions & { skipReplay?: boolean },
  stop: Promise<unknown>,
): Promise<void> {
  const fmt = new TailFormatter(o);
  let chain = Promise.resolve();
  const print = (ev: Event) => {
    chain = chain
      .then(async () => {
        o.out.write(`${await fmt.line(ev)}\n`);
      })
      .catch(() => undefined);
  };
  let replay: Event[] | undefined = [];
  const flush = () => {
    const held = replay ?? [];
    replay = undefined;
    if (!o.skipReplay) for (const ev of held.sort((a, b) => a.created_at - b.created_at)) print(ev);
  };
  const onEvent = (ev: Event, ctx: EventContext) => {
    if (replay && !ctx.live) return void replay.push(ev);
    if (replay) flush();
    print(ev);
  };
  client.on("event", onEvent);
  client.setChannels([...o.channels.keys()].map((id) => ({ id, kinds: TAIL_KINDS, requireMention: false })));
  void client.waitSubscribed(30_000).then(() => replay && flush());
  try {
    await stop;
  } finally {
    client.off("event", onEvent);
    await chain;
  }
}
