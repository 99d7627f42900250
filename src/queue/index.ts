/** The queue step (docs/architecture.md §3): durable acceptance, per-scope scheduling, recovery. */
export { QueueStore, SCHEMA_VERSION, STORE_FILE, type EventState, type StoredEvent, type TurnRecord, type TurnState } from "./store.js";
export { STATE_RETENTION_MS } from "./state-store.js";
export { Scheduler, type Batch, type FinalFailure, type SchedulerOptions } from "./scheduler.js";
export { scopeKey, scopeOf, parseScopeKey, type Scope, type SessionScope } from "./scope.js";
export type { Refusal as QueueRefusal, RefusalReason, RefusedEvent } from "./refusals.js";
export { LeaseLostError, QueueStoreError, StateRefusedError } from "./errors.js";
