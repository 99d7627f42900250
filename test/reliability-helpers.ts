/**
 * Shared helpers for the reliability suite: scanning raw output for secrets, and the
 * daemon's own view of its turns — printed for diagnosis only; the verdict is the
 * channel's (fixtures/channel-oracle.ts).
 */
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { KIND } from "../src/relay/kinds.js";
import { threadRootOf } from "../src/relay/events.js";
import type { Person, World } from "./fixtures/world.js";

// Relay-side grouping used by the fleet tests; the reliability suite's verdict is fixtures/channel-oracle.ts.
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

interface TurnRow {
  id: number;
  state: string;
  trigger_ids: string[];
  reply_ids: string[];
}

/** The daemon's finished turns from its state store (read-only; fine while it runs: SQLite WAL). */
export async function storedTurns(w: World): Promise<TurnRow[]> {
  const { default: Database } = await import("better-sqlite3");
  const db = new Database(join(w.dir, "state", "queue.db"), { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare("SELECT id, state, trigger_ids, reply_ids FROM turns").all() as Array<{ id: number; state: string; trigger_ids: string; reply_ids: string }>;
    return rows.map((r) => ({ ...r, trigger_ids: JSON.parse(r.trigger_ids) as string[], reply_ids: JSON.parse(r.reply_ids) as string[] }));
  } finally {
    db.close();
  }
}

/** The daemon's own view, one line per turn: for a failure message only, never a verdict. */
export async function turnsSummary(w: World): Promise<string> {
  const turns = await storedTurns(w);
  return turns.map((t) => `turn ${t.id} ${t.state}: ${t.trigger_ids.length} triggers, ${t.reply_ids.length} replies`).join("\n");
}
