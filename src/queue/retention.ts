/**
 * How long finished work is kept (docs/architecture.md §5): finished events, turns and idle
 * sessions are forgotten after a week; unfinished work never is. Pruned at start and hourly.
 */

export const STATE_RETENTION_MS = 7 * 86_400_000;
const PRUNE_EVERY_MS = 3_600_000;

/** Prunes now and every hour until the returned function is called. */
export function keepPruned(store: { prune(olderThanMs: number): unknown }): () => void {
  store.prune(STATE_RETENTION_MS);
  const timer = setInterval(() => store.prune(STATE_RETENTION_MS), PRUNE_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
