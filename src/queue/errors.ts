/** Failures of the durable queue store, with messages an operator can act on. */
export class QueueStoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "QueueStoreError";
  }
}

/**
 * A write only the scope's lease holder may make, refused: the lease expired and another
 * daemon took the scope over. The work must stop here (the new holder resumes it).
 */
export class LeaseLostError extends QueueStoreError {
  constructor(message: string) {
    super(message);
    this.name = "LeaseLostError";
  }
}

/**
 * The store refuses this daemon for good (the database belongs to another identity, or
 * its schema is newer than this code): retrying cannot help, the operator must act.
 */
export class StateRefusedError extends QueueStoreError {
  constructor(message: string) {
    super(message);
    this.name = "StateRefusedError";
  }
}

/** Why the state store cannot take a write now; it may later (space freed, the lock released, the database back). */
export type StoreUnavailable = "disk full" | "locked" | "I/O error" | "read-only" | "unreachable";

const PG_UNREACHABLE = ["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENOTFOUND", "57P01", "57P02", "57P03"];

/**
 * The passing kind of a store failure (SQLite's result code, PostgreSQL's SQLSTATE or the
 * connection's errno), or undefined for a failure that waiting cannot mend (a bug, a
 * corrupt file, a refused schema).
 */
export function storeUnavailable(err: unknown): StoreUnavailable | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string") {
    if (code === "SQLITE_FULL" || code === "53100") return "disk full";
    if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return "locked";
    if (code.startsWith("SQLITE_IOERR")) return "I/O error";
    if (code.startsWith("SQLITE_READONLY")) return "read-only";
    // 08xxx: connection exceptions; the others: the server shutting down or starting.
    if (code.startsWith("08") || PG_UNREACHABLE.includes(code)) return "unreachable";
  }
  const message = err instanceof Error ? err.message : "";
  if (/Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(message))
    return "unreachable";
  return undefined;
}
