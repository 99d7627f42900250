/** Failures of the durable queue store, with messages an operator can act on. */
export class QueueStoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "QueueStoreError";
  }
}
