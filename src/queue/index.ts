/** The queue step (docs/architecture.md §3): durable acceptance, per-scope scheduling, recovery. */
export { QueueStore, STORE_FILE } from "./store.js";
export { Scheduler, type Batch, type FinalFailure } from "./scheduler.js";
export type { Refusal as QueueRefusal } from "./refusals.js";
