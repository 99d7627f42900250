/**
 * The buzz tool publishes of one turn still on their way. A turn ends only once they have
 * landed or failed: a reconnect can hold one for a while, and the turn's end (the reply
 * fallback, what is recorded as published) must see it.
 */
export class InflightPublishes {
  private count = 0;
  private waiters: Array<() => void> = [];

  /** A publish starts; the returned release ends it (calling it again does nothing). */
  begin(): () => void {
    this.count++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.count === 0) for (const wake of this.waiters.splice(0)) wake();
    };
  }

  /** Resolves once none is on its way (at once when none is). */
  settled(): Promise<void> {
    return this.count === 0 ? Promise.resolve() : new Promise<void>((r) => this.waiters.push(r));
  }
}
