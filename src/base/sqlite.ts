/**
 * SQLite for the queue, the state lock and the development relay: Node's built-in
 * `node:sqlite` (no native module to build, so `npm install -g` of the package works with
 * nothing but Node; docs/architecture.md, "SQLite"). This is the one place that touches
 * it, and it gives the rest what the code relies on:
 *
 * - errors carry SQLite's result code by name in `code` (`SQLITE_BUSY`, `SQLITE_FULL`,
 *   `SQLITE_CORRUPT`; an extended code by its primary name, its number in `errcode`), as
 *   queue/errors.ts reads them;
 * - `transaction(fn)` runs `fn` in BEGIN … COMMIT (a SAVEPOINT when nested) and rolls back
 *   when it throws;
 * - a bound `undefined` is NULL; rows are plain objects;
 * - the busy timeout is a PRAGMA, so it can change while the file is open
 *   (queue/lock-patience.ts).
 *
 * Needs Node 22.13 or newer (no flag since 22.13.0 and 23.4.0; src/base/node-version.ts
 * refuses older ones before anything loads this). Node 22 prints an ExperimentalWarning
 * when the module loads; the subset used here has not changed since 22.13, so the
 * warning is kept from the operator's log (other warnings pass).
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";

/** What a write did. */
export interface RunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

type Value = null | number | bigint | string | Uint8Array | undefined;

/** The part of `node:sqlite` this module uses, typed here so the build does not depend on which @types/node has it. */
interface SyncStatement {
  run(...params: unknown[]): RunResult;
  get(...params: unknown[]): Record<string, unknown> | undefined;
  all(...params: unknown[]): Record<string, unknown>[];
  iterate(...params: unknown[]): IterableIterator<Record<string, unknown>>;
}
interface SyncDatabase {
  exec(sql: string): void;
  prepare(sql: string): SyncStatement;
  close(): void;
}
interface NodeSqlite {
  DatabaseSync: new (path: string, options?: { readOnly?: boolean }) => SyncDatabase;
}

const nodeSqlite: NodeSqlite = (() => {
  const emit = process.emitWarning;
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    const text = typeof warning === "string" ? warning : warning.message;
    if (/^SQLite is an experimental feature/.test(text)) return;
    return (emit as (...a: unknown[]) => void).call(process, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    return createRequire(import.meta.url)("node:sqlite") as NodeSqlite;
  } finally {
    process.emitWarning = emit;
  }
})();

/** SQLite's primary result codes (https://www.sqlite.org/rescode.html), by number. */
const PRIMARY: Record<number, string> = {
  1: "ERROR",
  2: "INTERNAL",
  3: "PERM",
  4: "ABORT",
  5: "BUSY",
  6: "LOCKED",
  7: "NOMEM",
  8: "READONLY",
  9: "INTERRUPT",
  10: "IOERR",
  11: "CORRUPT",
  12: "NOTFOUND",
  13: "FULL",
  14: "CANTOPEN",
  15: "PROTOCOL",
  16: "EMPTY",
  17: "SCHEMA",
  18: "TOOBIG",
  19: "CONSTRAINT",
  20: "MISMATCH",
  21: "MISUSE",
  22: "NOLFS",
  23: "AUTH",
  24: "FORMAT",
  25: "RANGE",
  26: "NOTADB",
  27: "NOTICE",
  28: "WARNING",
};

/** `err` with `code` set to SQLite's result code by name, when node:sqlite gave one. */
function named(err: unknown): unknown {
  const e = err as { errcode?: unknown; code?: unknown } | null;
  if (e && typeof e.errcode === "number") {
    const primary = PRIMARY[e.errcode & 0xff];
    if (primary) e.code = `SQLITE_${primary}`;
  }
  return err;
}

function bindable(params: unknown[]): unknown[] {
  return params.map((p) => {
    if (p === undefined) return null;
    if (p !== null && typeof p === "object" && !(p instanceof Uint8Array)) {
      const o = p as Record<string, Value>;
      return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, v === undefined ? null : v]));
    }
    return p;
  });
}

/** A prepared statement; `P` its parameters (a tuple, or a named-parameter object), `R` a row. */
export class Statement<P extends unknown[] | object = unknown[], R = Record<string, unknown>> {
  constructor(private readonly st: SyncStatement) {}

  run(...params: P extends unknown[] ? P : [P]): RunResult {
    try {
      return this.st.run(...bindable(params));
    } catch (err) {
      throw named(err);
    }
  }

  get(...params: P extends unknown[] ? P : [P]): R | undefined {
    try {
      const row = this.st.get(...bindable(params));
      return row === undefined ? undefined : ({ ...row } as R);
    } catch (err) {
      throw named(err);
    }
  }

  all(...params: P extends unknown[] ? P : [P]): R[] {
    try {
      return this.st.all(...bindable(params)).map((row) => ({ ...row }) as R);
    } catch (err) {
      throw named(err);
    }
  }

  *iterate(...params: P extends unknown[] ? P : [P]): IterableIterator<R> {
    try {
      for (const row of this.st.iterate(...bindable(params))) yield { ...row } as R;
    } catch (err) {
      throw named(err);
    }
  }
}

export interface OpenOptions {
  /** Open for reading only; the file must exist. */
  readonly?: boolean;
  /** Refuse (SQLITE_CANTOPEN) instead of creating the file. */
  fileMustExist?: boolean;
  /** SQLite's busy timeout in ms (how long a statement waits for another connection's lock). Default 0. */
  timeout?: number;
}

export class Database {
  private readonly db: SyncDatabase;
  private depth = 0;
  private isOpen = true;

  constructor(
    readonly file: string,
    opts: OpenOptions = {},
  ) {
    if ((opts.fileMustExist || opts.readonly) && file !== ":memory:" && !existsSync(file))
      throw Object.assign(new Error(`unable to open database file: ${file} does not exist`), { code: "SQLITE_CANTOPEN" });
    try {
      this.db = new nodeSqlite.DatabaseSync(file, { readOnly: opts.readonly === true });
    } catch (err) {
      throw named(err);
    }
    if (opts.timeout) this.pragma(`busy_timeout = ${Math.floor(opts.timeout)}`);
  }

  get open(): boolean {
    return this.isOpen;
  }

  exec(sql: string): void {
    try {
      this.db.exec(sql);
    } catch (err) {
      throw named(err);
    }
  }

  prepare<P extends unknown[] | object = unknown[], R = Record<string, unknown>>(sql: string): Statement<P, R> {
    try {
      return new Statement<P, R>(this.db.prepare(sql));
    } catch (err) {
      throw named(err);
    }
  }

  /** `PRAGMA <source>`: the rows it returns (none for most settings). */
  pragma<R = Record<string, unknown>>(source: string): R[] {
    return this.prepare<[], R>(`PRAGMA ${source}`).all();
  }

  /** Runs `fn` in a transaction: committed when it returns, rolled back when it throws. */
  transaction<T>(fn: () => T): T {
    const savepoint = this.depth > 0 ? `sp${this.depth}` : undefined;
    this.exec(savepoint ? `SAVEPOINT ${savepoint}` : "BEGIN");
    this.depth++;
    try {
      const result = fn();
      this.exec(savepoint ? `RELEASE ${savepoint}` : "COMMIT");
      return result;
    } catch (err) {
      try {
        this.exec(savepoint ? `ROLLBACK TO ${savepoint}; RELEASE ${savepoint}` : "ROLLBACK");
      } catch {
        // SQLite already ended the transaction (it does on some errors): nothing to undo.
      }
      throw err;
    } finally {
      this.depth--;
    }
  }

  close(): void {
    if (!this.isOpen) return;
    this.db.close();
    this.isOpen = false;
  }
}
