/**
 * Posts held for a gate's approval (`mcp.servers.<name>.hold_replies`, docs/configuration.md):
 * the agent's send_message calls of one turn wait here until the `stop: wait` gate allows the
 * turn to end, then go out in the order they were made; a wait that is cancelled or given up
 * drops them (docs/how-it-works.md, stop gates).
 */
export class HeldPosts {
  private readonly queue: Array<() => Promise<unknown>> = [];

  /** `gates`: the hold_replies servers the posts wait for. */
  constructor(readonly gates: string[]) {}

  /** Holds one post (the publish itself, run later); returns what the agent is told. */
  add(post: () => Promise<unknown>): string {
    this.queue.push(post);
    const which = this.gates.map((g) => `'${g}'`).join(", ");
    return `queued until approved by gate ${which}: this message is posted, in order with the others, once the gate allows this turn to end, and dropped if it never does`;
  }

  get size(): number {
    return this.queue.length;
  }

  /** Publishes the held posts one after the other (each once the one before it is in); returns how many. */
  async flush(): Promise<number> {
    let n = 0;
    while (this.queue.length > 0) {
      const post = this.queue.shift()!;
      await post();
      n++;
    }
    return n;
  }

  /** Forgets the held posts unpublished; returns how many there were. */
  drop(): number {
    const n = this.queue.length;
    this.queue.length = 0;
    return n;
  }
}
