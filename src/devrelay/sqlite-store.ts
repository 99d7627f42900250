/**
 * SQLite storage for `--data DIR` (src/base/sqlite.ts, WAL), so history, channels and the
 * relay key survive a restart. SQL narrows by ids/kinds/authors/since/until; the exact
 * NIP-01 match (tags included) and the reader's access check run on each candidate,
 * newest first, until the limit is reached.
 */
import { Database } from "../base/sqlite.js";
import type { Event } from "nostr-tools";
import { matchFilter, type Filter } from "nostr-tools/filter";
import { isNewer, replaceKey, type EventStore, type PutResult, type StoredRecord } from "./store.js";

interface Row {
  json: string;
  channel: string | null;
}

export class SqliteStore implements EventStore {
  private readonly db: Database;
  private readonly stmt;

  constructor(file: string) {
    this.db = new Database(file);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = NORMAL");
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS events (
        id TEXT PRIMARY KEY, pubkey TEXT NOT NULL, kind INTEGER NOT NULL, created_at INTEGER NOT NULL,
        channel TEXT, rkey TEXT, json TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS events_time ON events (created_at DESC, id);
      CREATE INDEX IF NOT EXISTS events_kind ON events (kind, created_at DESC);
      CREATE INDEX IF NOT EXISTS events_rkey ON events (rkey) WHERE rkey IS NOT NULL;
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);`);
    this.stmt = {
      get: this.db.prepare<[string], Row>("SELECT json, channel FROM events WHERE id = ?"),
      byRkey: this.db.prepare<[string], Row>("SELECT json, channel FROM events WHERE rkey = ?"),
      del: this.db.prepare<[string]>("DELETE FROM events WHERE id = ?"),
      insert: this.db.prepare(
        "INSERT OR IGNORE INTO events (id, pubkey, kind, created_at, channel, rkey, json) VALUES (?, ?, ?, ?, ?, ?, ?)",
      ),
      count: this.db.prepare<[], { n: number }>("SELECT count(*) AS n FROM events"),
      getMeta: this.db.prepare<[string], { value: string }>("SELECT value FROM meta WHERE key = ?"),
      setMeta: this.db.prepare("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"),
    };
  }

  put(rec: StoredRecord): PutResult {
    const ev = rec.event;
    return this.db.transaction((): PutResult => {
      if (this.stmt.get.get(ev.id)) return "duplicate";
      const key = replaceKey(ev);
      if (key) {
        const old = this.stmt.byRkey.get(key);
        if (old) {
          const oldEv = JSON.parse(old.json) as Event;
          if (!isNewer(ev, oldEv)) return "superseded";
          this.stmt.del.run(oldEv.id);
        }
      }
      this.stmt.insert.run(ev.id, ev.pubkey, ev.kind, ev.created_at, rec.channel ?? null, key ?? null, JSON.stringify(ev));
      return "stored";
    });
  }

  get(id: string): StoredRecord | undefined {
    const row = this.stmt.get.get(id);
    return row ? toRecord(row) : undefined;
  }

  delete(id: string): boolean {
    return this.stmt.del.run(id).changes > 0;
  }

  query(filter: Filter, accept: (rec: StoredRecord) => boolean, limit: number): StoredRecord[] {
    const out: StoredRecord[] = [];
    if (limit <= 0) return out;
    const where: string[] = [];
    const params: (string | number)[] = [];
    const inList = (col: string, values: (string | number)[]) => {
      where.push(`${col} IN (${values.map(() => "?").join(",")})`);
      params.push(...values);
    };
    if (filter.ids) inList("id", filter.ids);
    if (filter.kinds) inList("kind", filter.kinds);
    if (filter.authors) inList("pubkey", filter.authors);
    if (filter.since !== undefined) where.push("created_at >= ?"), params.push(filter.since);
    if (filter.until !== undefined) where.push("created_at <= ?"), params.push(filter.until);
    const sql = `SELECT json, channel FROM events ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at DESC, id ASC`;
    for (const row of this.db.prepare<unknown[], Row>(sql).iterate(...params)) {
      const rec = toRecord(row);
      if (!matchFilter(filter, rec.event) || !accept(rec)) continue;
      out.push(rec);
      if (out.length >= limit) break;
    }
    return out;
  }

  count(): number {
    return this.stmt.count.get()?.n ?? 0;
  }

  getMeta(key: string): string | undefined {
    return this.stmt.getMeta.get(key)?.value;
  }

  setMeta(key: string, value: string): void {
    this.stmt.setMeta.run(key, value);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

function toRecord(row: Row): StoredRecord {
  return { event: JSON.parse(row.json) as Event, channel: row.channel ?? undefined };
}
