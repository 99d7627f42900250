/**
 * The daemon's own store is pruned at start and hourly: finished events, turns and idle
 * sessions are forgotten after STATE_RETENTION_MS (docs/architecture.md §5); unfinished
 * work never is.
 */
import { STATE_RETENTION_MS } from "./state-store.js";

const PRUNE_EVERY_MS = 3_600_000;

/** Prunes now and every hour until the returned function is called. */
export function keepPruned(store: { prune(olderThanMs: number): unknown }): () => void {
  store.prune(STATE_RETENTION_MS);
  const timer = setInterval(() => store.prune(STATE_RETENTION_MS), PRUNE_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
