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
