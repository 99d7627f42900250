/**
 * How long a write to the queue file waits for a lock someone else holds on it (a `sqlite3`
 * shell left in a transaction, a backup tool).
 *
 * SQLite here is synchronous (src/base/sqlite.ts), so its busy wait stops the whole event loop while it
 * waits: the relay connection, `/readyz`, the running turns. Waiting the full time on every
 * write of a file that stays locked would freeze the daemon for most of the lock — a
 * mention alone writes three times before intake can store it, 15 s before intake even
 * says it paused. So the first write that finds the file locked waits the full time
 * (`waitMs`); once one has given up, later writes do not wait at all and fail at once with
 * the same SQLITE_BUSY (intake pauses, a turn's writes retry on their own schedule:
 * docs/operating.md, "back-pressure"), until one goes through and the patience is back.
 */
import type { Database, RunResult } from "../base/sqlite.js";
import { storeUnavailable } from "./errors.js";

/** SQLite's busy timeout for a write while the file was not found locked: long enough for someone's quick look. */
export const LOCK_WAIT_MS = 5_000;

/** A prepared statement: its `run` (a write; reads never wait for a lock in WAL mode) is guarded. */
type Writable = { run(...params: unknown[]): RunResult };

export class LockPatience {
  /** False while writes fail at once: the last one found the file locked. */
  private patient = true;

  constructor(
    private readonly db: Database,
    private readonly waitMs = LOCK_WAIT_MS,
  ) {
    db.pragma(`busy_timeout = ${waitMs}`);
  }

  /** `statements`, each one's `run` going through `write`. */
  guard<T extends Record<string, { run: unknown }>>(statements: T): T {
    for (const st of Object.values(statements) as Writable[]) {
      const run = st.run.bind(st);
      Object.defineProperty(st, "run", { value: (...params: unknown[]) => this.write(() => run(...params)) });
    }
    return statements;
  }

  private write<R>(fn: () => R): R {
    try {
      const r = fn();
      if (!this.patient) this.setPatient(true);
      return r;
    } catch (err) {
      if (this.patient && storeUnavailable(err) === "locked") this.setPatient(false);
      throw err;
    }
  }

  private setPatient(patient: boolean): void {
    this.patient = patient;
    this.db.pragma(`busy_timeout = ${patient ? this.waitMs : 0}`);
  }
}
