/**
 * Presence (`relay.presence`): "online" at start and every minute after, "offline" once at
 * shutdown when the connection is up, waited for at most a second. Presence is telemetry:
 * it is the first thing dropped when the frame budget is short or the relay asks the
 * identity to hold back (docs/protocol.md §7).
 */
import type { RelayClient } from "../relay/client.js";
import type { Publisher } from "../relay/publisher.js";
import { presence } from "../nostr/events.js";

/** Buzz keeps presence for 180 s (three missed 60 s heartbeats); one every 60 s keeps it alive. */
const PRESENCE_INTERVAL_MS = 60_000;

export class Presence {
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly relay: Pick<RelayClient, "state">,
    private readonly publisher: Pick<Publisher, "send">,
  ) {}

  start(): void {
    const announce = () => void this.publisher.send(presence("online"), { once: true }).catch(() => undefined);
    announce();
    this.timer = setInterval(announce, PRESENCE_INTERVAL_MS);
    this.timer.unref();
  }

  /** Stops announcing (at the start of a shutdown). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Says "offline" while the connection is still up (at the end of a shutdown). */
  async offline(): Promise<void> {
    if (this.relay.state !== "subscribed") return;
    await Promise.race([
      this.publisher.send(presence("offline"), { once: true }).catch(() => undefined),
      new Promise((r) => setTimeout(r, 1000).unref()),
    ]);
  }
}
