/**
 * Event-id de-duplication with bounded memory (docs/protocol.md §5 "Dedupe": the harness keeps a
 * two-generation set of 12 000 ids). When the young generation fills, the old one is dropped
 * whole: no per-entry bookkeeping, and an id is remembered for at least `capacity / 2` newer ids.
 */
export class TwoGenerationDedupe {
  private young = new Set<string>();
  private old = new Set<string>();
  private readonly perGeneration: number;

  /** @param capacity total ids remembered at most. Default 12 000, as the Rust harness. */
  constructor(capacity = 12_000) {
    this.perGeneration = Math.max(1, Math.floor(capacity / 2));
  }

  has(id: string): boolean {
    return this.young.has(id) || this.old.has(id);
  }

  /** Records `id`; returns false when it was already seen. */
  add(id: string): boolean {
    if (this.has(id)) return false;
    if (this.young.size >= this.perGeneration) {
      this.old = this.young;
      this.young = new Set();
    }
    this.young.add(id);
    return true;
  }

  /** Forgets an id, e.g. when an event was dropped locally and must be accepted on replay. */
  delete(id: string): void {
    this.young.delete(id);
    this.old.delete(id);
  }

  get size(): number {
    return this.young.size + this.old.size;
  }
}
