/**
 * SQLite files only their owner may read or write (docs/security.md): made 0600 before
 * SQLite opens them (SQLite gives the -wal and -shm files it creates the database file's
 * mode), and ones an earlier version left open to others closed down again.
 */
import { chmodSync, closeSync, existsSync, openSync, statSync } from "node:fs";

/** Creates `file` with mode 0600 when missing; tightens it and its -wal/-shm to 0600. Returns the files it tightened. */
export function privateSqliteFile(file: string): string[] {
  if (!existsSync(file)) closeSync(openSync(file, "a", 0o600));
  const tightened: string[] = [];
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) {
    try {
      if (statSync(f).mode & 0o077) {
        chmodSync(f, 0o600);
        tightened.push(f);
      }
    } catch {
      // not there: SQLite makes it with the database's mode
    }
  }
  return tightened;
}
