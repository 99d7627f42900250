/**
 * Coalesces bursts of changes into one action: the action runs once the changes have been
 * quiet for `quietMs`, and at the latest `maxMs` after the first unflushed change, so a steady
 * trickle (100 channels joined one by one within a second) still goes out in a frame or two
 * and never waits forever. Used for the channel subscription (Buzz admits ~50 frames per 5 s
 * per connection; docs/protocol.md, "Limits") and for batching channel lookups.
 */
export interface CoalesceOptions {
  /** Quiet time that ends a burst. */
  quietMs: number;
  /** Longest a change waits while the burst goes on. */
  maxMs: number;
}

export class Coalescer {
  private quiet: NodeJS.Timeout | undefined;
  private deadline: NodeJS.Timeout | undefined;

  constructor(
    private readonly action: () => void,
    private readonly opts: CoalesceOptions,
  ) {}

  /** A change happened: (re)arms the quiet timer, and the deadline if none is running. */
  touch(): void {
    clearTimeout(this.quiet);
    this.quiet = setTimeout(() => this.flush(), this.opts.quietMs);
    this.deadline ??= setTimeout(() => this.flush(), this.opts.maxMs);
  }

  /** True while a change waits to be flushed. */
  get pending(): boolean {
    return this.deadline !== undefined;
  }

  /** Runs the action now if a change is waiting. */
  flush(): void {
    if (!this.pending) return;
    this.cancel();
    this.action();
  }

  /** Forgets waiting changes without running the action. */
  cancel(): void {
    clearTimeout(this.quiet);
    clearTimeout(this.deadline);
    this.quiet = this.deadline = undefined;
  }
}
