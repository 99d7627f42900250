/**
 * Pending `OK` answers by event id (NIP-01): publishes and AUTH both wait for one. Several
 * waiters may share an id (the same event published twice concurrently).
 */
export type OkWaiter = (ok: boolean, reason: string) => void;

/** Reason handed to waiters when the socket goes away before their `OK`. */
export const DISCONNECTED = "\0disconnected";

export class OkWaiters {
  private map = new Map<string, OkWaiter[]>();

  /** Waits for the `OK` of `id` up to `timeoutMs`; `onTimeout` runs instead when it does not come. */
  add(id: string, timeoutMs: number, onAnswer: OkWaiter, onTimeout: () => void): void {
    const t = setTimeout(() => {
      this.remove(id, waiter);
      onTimeout();
    }, timeoutMs);
    const waiter: OkWaiter = (ok, reason) => {
      clearTimeout(t);
      onAnswer(ok, reason);
    };
    this.map.set(id, [...(this.map.get(id) ?? []), waiter]);
  }

  resolve(id: string, ok: boolean, reason: string): void {
    const ws = this.map.get(id);
    if (!ws) return;
    this.map.delete(id);
    for (const w of ws) w(ok, reason);
  }

  /** Answers every waiter whose id `which` selects, as if the relay had said so. */
  answerWhere(which: (id: string) => boolean, ok: boolean, reason: string): void {
    for (const id of [...this.map.keys()]) if (which(id)) this.resolve(id, ok, reason);
  }

  /** Every waiter learns the connection is gone. */
  failAll(): void {
    const all = [...this.map.values()].flat();
    this.map.clear();
    for (const w of all) w(false, DISCONNECTED);
  }

  private remove(id: string, w: OkWaiter): void {
    const rest = (this.map.get(id) ?? []).filter((x) => x !== w);
    if (rest.length) this.map.set(id, rest);
    else this.map.delete(id);
  }
}
