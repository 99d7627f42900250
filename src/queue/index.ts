/** The queue step (docs/architecture.md §3): durable acceptance, per-scope scheduling, recovery. */
export { SqliteStore, STORE_FILE } from "./sqlite-store.js";
export { Scheduler, type Batch, type FinalFailure } from "./scheduler.js";
export type { QueueBackend } from "./backend.js";
export type { Refusal as QueueRefusal } from "./refusals.js";
