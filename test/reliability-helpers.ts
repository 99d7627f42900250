/**
 * Shared helpers for the reliability suite: scanning raw output for secrets, and the
 * daemon's own view of its turns — printed for diagnosis only; the verdict is the
 * channel's (fixtures/channel-oracle.ts).
 */
import { join } from "node:path";
import type { Person, World } from "./fixtures/world.js";

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
