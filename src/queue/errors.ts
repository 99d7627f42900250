/** Failures of the durable queue store, with messages an operator can act on. */
export class QueueStoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "QueueStoreError";
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
