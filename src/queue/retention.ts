/**
 * Retention (docs/architecture.md §5): finished events, turns, claims and idle sessions are
 * forgotten after STATE_RETENTION_MS; unfinished work never is. The scheduler prunes its
 * queue at start; this prunes every store of the daemon hourly after that.
 */
import type { Logger } from "../base/log.js";
import { STATE_RETENTION_MS } from "./backend.js";

const PRUNE_EVERY_MS = 3_600_000;

/** Prunes each store every hour until the returned function is called; a failed prune is logged and tried again the next hour. */
export function keepPruned(stores: ReadonlyArray<{ prune(olderThanMs: number): Promise<void> }>, log: Logger): () => void {
  const each = [...new Set(stores)];
  const timer = setInterval(() => {
    for (const s of each)
      s.prune(STATE_RETENTION_MS).catch((err: unknown) =>
        log.warn({ evt: "queue.store_write_failed", what: "prune", err: err instanceof Error ? err.message : String(err) }),
      );
  }, PRUNE_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
