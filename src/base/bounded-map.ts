/**
 * A Map that holds at most `capacity` entries and forgets the oldest first. "Oldest" is the
 * least recently set: setting a key again makes it the newest. For the caches and
 * once-per-window memories that must not grow with traffic (denied-reply throttles,
 * profiles, the events a session has seen).
 */
export class BoundedMap<K, V> extends Map<K, V> {
  constructor(readonly capacity: number) {
    super();
  }

  override set(key: K, value: V): this {
    super.delete(key);
    super.set(key, value);
    // A Map iterates in insertion order, so the first key is the one set longest ago.
    for (const oldest of this.keys()) {
      if (this.size <= this.capacity) break;
      this.delete(oldest);
    }
    return this;
  }
}
