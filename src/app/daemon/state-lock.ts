/**
 * One daemon per `state_dir`. Two daemons on one directory would take over each other's
 * link socket and run the same queued mentions twice, so the daemon holds an exclusive
 * lock on the directory for its whole life.
 *
 * The lock is the operating system's advisory record lock (fcntl) on `daemon.lock`, taken
 * through SQLite's own locking (node:sqlite through src/base/sqlite.ts, already the queue's store) with
 * `locking_mode = EXCLUSIVE`: the kernel drops it when the process ends in any way,
 * SIGKILL included, so a killed daemon never leaves a lock behind that blocks the next
 * start, and there is no staleness timer to tune or refresh. The holder's pid is written
 * beside it (`daemon.pid`) only so a refused daemon and `doctor` can name it; the file
 * proves nothing by itself, the lock does.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { privateSqliteFile } from "../../base/private-file.js";
import { Database } from "../../base/sqlite.js";
import { storeUnavailable } from "../../queue/errors.js";

const LOCK_FILE = "daemon.lock";
const PID_FILE = "daemon.pid";

/** Another daemon holds the lock on this state_dir. */
export class StateLockedError extends Error {
  override name = "StateLockedError";
  constructor(
    readonly stateDir: string,
    readonly holderPid: number | undefined,
  ) {
    super(
      `state_dir ${stateDir} is in use by another buzz-bridge daemon${holderPid ? ` (pid ${holderPid})` : ""}; ` +
        "stop that daemon first, or give this one its own state_dir",
    );
  }
}

/** The lock could not be taken for another reason (permissions, a broken lock file). */
class StateLockError extends Error {
  override name = "StateLockError";
}

/** SQLite said another connection holds the lock: the queue's own reading of its result codes. */
const isBusy = (err: unknown) => storeUnavailable(err) === "locked";

function readHolder(stateDir: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(join(stateDir, PID_FILE), "utf8").trim(), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

export class StateLock {
  private constructor(
    private db: Database | undefined,
    readonly stateDir: string,
  ) {}

  /**
   * Takes the lock or throws StateLockedError naming the holder. `waitMs` rides out a
   * reader that holds the file for an instant (`doctor` looking), never a live daemon.
   */
  static acquire(stateDir: string, waitMs = 1000): StateLock {
    const file = join(stateDir, LOCK_FILE);
    let db: Database | undefined;
    try {
      privateSqliteFile(file);
      db = new Database(file, { timeout: waitMs });
      db.pragma("locking_mode = EXCLUSIVE");
      db.pragma("journal_mode = MEMORY");
      // The first write takes the exclusive lock; in EXCLUSIVE mode it is kept until close.
      db.exec("BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS lock (one INTEGER PRIMARY KEY); COMMIT");
    } catch (err) {
      db?.close();
      if (isBusy(err)) throw new StateLockedError(stateDir, readHolder(stateDir));
      throw new StateLockError(`cannot lock state_dir ${stateDir} (${file}): ${(err as Error).message}`, { cause: err });
    }
    try {
      writeFileSync(join(stateDir, PID_FILE), `${process.pid}\n`);
    } catch {
      // Naming the holder is a courtesy; the lock itself is held.
    }
    return new StateLock(db, stateDir);
  }

  /**
   * Who holds the lock, without taking it and without creating anything (`doctor` may run
   * as another user than the daemon): `free`, `held` with the pid when known, or
   * `unknown` when the lock file cannot be read.
   */
  static probe(stateDir: string): { state: "free" } | { state: "held"; pid?: number } | { state: "unknown"; error: string } {
    const file = join(stateDir, LOCK_FILE);
    if (!existsSync(file)) return { state: "free" };
    let db: Database | undefined;
    try {
      db = new Database(file, { readonly: true, fileMustExist: true, timeout: 0 });
      db.prepare("SELECT count(*) FROM sqlite_master").get();
      return { state: "free" };
    } catch (err) {
      if (isBusy(err)) return { state: "held", pid: readHolder(stateDir) };
      return { state: "unknown", error: (err as Error).message };
    } finally {
      db?.close();
    }
  }

  /** Gives the lock up (the kernel does the same when the process ends). */
  release(): void {
    if (!this.db) return;
    if (readHolder(this.stateDir) === process.pid) rmSync(join(this.stateDir, PID_FILE), { force: true });
    this.db.close();
    this.db = undefined;
  }
}
