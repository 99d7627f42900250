/**
 * Shared checks for the reliability suite (issue 10): counting the agent's answers per
 * mention as a person reading the channels would, and scanning raw output for secrets.
 * "Answered exactly once" means: exactly one message by the agent in the mention's
 * thread (a reply or a failure notice), and nothing else by the agent anywhere else.
 */
import { join } from "node:path";
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

/**
 * With batching (several mentions of one scope in one turn), "answered exactly once" per
 * mention: it is a trigger of exactly one finished turn, that turn published exactly one
 * agent message, and the agent's messages on the relay are exactly those replies (none
 * twice, none extra). Returns how many turns answered the mentions.
 */
export async function assertCoveredOnce(w: World, channels: string[], mentions: Event[], timeoutMs: number): Promise<{ turns: number; notices: number }> {
  const deadline = Date.now() + timeoutMs;
  let problems: string[] = ["not checked yet"];
  let result = { turns: 0, notices: 0 };
  while (Date.now() < deadline) {
    problems = [];
    const turns = await storedTurns(w).catch(() => []);
    const byTrigger = new Map<string, TurnRow[]>();
    for (const t of turns) for (const id of t.trigger_ids) byTrigger.set(id, [...(byTrigger.get(id) ?? []), t]);
    for (const m of mentions) {
      const ts = byTrigger.get(m.id) ?? [];
      if (ts.length !== 1) problems.push(`${JSON.stringify(m.content)} is a trigger of ${ts.length} turns`);
      else if (ts[0]!.state !== "done" && ts[0]!.state !== "failed") problems.push(`${JSON.stringify(m.content)}: its turn is ${ts[0]!.state}`);
    }
    const finished = turns.filter((t) => t.trigger_ids.some((id) => mentions.some((m) => m.id === id)));
    const replies = new Map<string, Event>();
    for (const ch of channels) for (const e of await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#h": [ch], limit: 2000 }).catch(() => [])) replies.set(e.id, e);
    const isNotice = (e: Event) => e.tags.some((t) => t[0] === "buzz" && t[1] === "agent-failure");
    const noticeList = [...replies.values()].filter(isNotice);
    const expected = new Set<string>();
    for (const t of finished) {
      if (t.state === "failed") {
        const ns = noticeList.filter((n) => t.trigger_ids.includes(threadRootOf(n)));
        if (t.reply_ids.length !== 0 || ns.length !== 1) problems.push(`failed turn ${t.id} has ${t.reply_ids.length} replies and ${ns.length} failure notices`);
        for (const n of ns) expected.add(n.id);
      } else if (t.reply_ids.length !== 1) problems.push(`turn ${t.id} (${t.state}, ${t.trigger_ids.length} triggers) published ${t.reply_ids.length} messages`);
      for (const id of t.reply_ids) expected.add(id);
    }
    for (const id of replies.keys()) if (!expected.has(id)) problems.push(`agent message ${id} belongs to no turn: ${JSON.stringify(replies.get(id)!.content.slice(0, 80))}`);
    for (const id of expected) if (!replies.has(id)) problems.push(`reply ${id} is not on the relay`);
    const notices = noticeList.length;
    result = { turns: finished.length, notices };
    if (problems.length === 0) return result;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`mentions not covered exactly once (${problems.length} problems):\n${problems.slice(0, 20).join("\n")}`);
}

/** The daemon's own view, one line per turn: for a failure message only, never a verdict. */
export async function turnsSummary(w: World): Promise<string> {
  const turns = await storedTurns(w);
  return turns.map((t) => `turn ${t.id} ${t.state}: ${t.trigger_ids.length} triggers, ${t.reply_ids.length} replies`).join("\n");
}
