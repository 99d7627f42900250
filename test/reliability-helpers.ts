/**
 * Shared checks for the reliability suite (issue 10): counting the agent's answers per
 * mention as a person reading the channels would, and scanning raw output for secrets.
 * "Answered exactly once" means: exactly one message by the agent in the mention's
 * thread (a reply or a failure notice), and nothing else by the agent anywhere else.
 */
import type { Event } from "nostr-tools";
import { KIND } from "../src/relay/kinds.js";
import { threadRootOf } from "../src/relay/events.js";
import type { Person, World } from "./fixtures/world.js";

/** The agent's kind 9 messages in `channels` grouped by thread root (the mention they answer). */
export async function repliesByThread(w: World, channels: string[]): Promise<Map<string, Event[]>> {
  const by = new Map<string, Event[]>();
  for (const ch of channels) {
    const evs = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#h": [ch], limit: 2000 });
    for (const e of evs) {
      const root = threadRootOf(e);
      by.set(root, [...(by.get(root) ?? []), e]);
    }
  }
  return by;
}

/** Polls until every mention has at least one agent message in its thread; returns the grouping. */
export async function waitAllAnswered(w: World, channels: string[], mentions: Event[], timeoutMs: number): Promise<Map<string, Event[]>> {
  const deadline = Date.now() + timeoutMs;
  let by = new Map<string, Event[]>();
  while (Date.now() < deadline) {
    by = await repliesByThread(w, channels).catch(() => by);
    if (mentions.every((m) => (by.get(m.id)?.length ?? 0) >= 1)) return by;
    await new Promise((r) => setTimeout(r, 500));
  }
  const missing = mentions.filter((m) => !by.has(m.id));
  throw new Error(`${missing.length}/${mentions.length} mentions never answered, e.g. ${missing.slice(0, 5).map((m) => JSON.stringify(m.content)).join(", ")}`);
}

/** Every mention: exactly one agent message in its thread; no agent message outside the mentions' threads. */
export function assertExactlyOnce(by: Map<string, Event[]>, mentions: Event[]): { answered: number; notices: number } {
  const problems: string[] = [];
  let notices = 0;
  const ids = new Set(mentions.map((m) => m.id));
  for (const m of mentions) {
    const rs = by.get(m.id) ?? [];
    if (rs.length !== 1) problems.push(`${JSON.stringify(m.content)}: ${rs.length} agent messages`);
    if (rs.some((r) => r.tags.some((t) => t[0] === "buzz" && t[1] === "agent-failure"))) notices++;
  }
  for (const [root, rs] of by) if (!ids.has(root)) problems.push(`agent posted ${rs.length} message(s) in unrelated thread ${root}: ${JSON.stringify(rs[0]!.content.slice(0, 80))}`);
  if (problems.length) throw new Error(`not exactly once (${problems.length} problems):\n${problems.slice(0, 20).join("\n")}`);
  return { answered: mentions.length - notices, notices };
}

/** Secret forms of the test identities: nsec and 64-hex secret key. */
export function secretsOf(people: Person[]): string[] {
  return people.flatMap((p) => [p.nsec, Buffer.from(p.sk).toString("hex")]);
}

/** Names of any secret found in `text` (by person), for an assertion message that leaks nothing itself. */
export function leakedSecrets(text: string, people: Person[]): string[] {
  const lower = text.toLowerCase();
  return people.flatMap((p) => {
    const found: string[] = [];
    if (text.includes(p.nsec)) found.push(`${p.name} nsec`);
    if (lower.includes(Buffer.from(p.sk).toString("hex"))) found.push(`${p.name} hex secret key`);
    return found;
  });
}
