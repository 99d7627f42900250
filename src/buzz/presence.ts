/**
 * Presence (`relay.presence`): "online" at start and every minute after, "offline" once at
 * shutdown when the connection is up, waited for at most a second. Presence is telemetry:
 * it is the first thing dropped when the frame budget is short or the relay asks the
 * identity to hold back (docs/protocol.md §7).
 */
import type { EventTemplate } from "nostr-tools";
import type { RelayClient } from "../relay/client.js";
import { presence } from "../nostr/events.js";

/** Buzz keeps presence for 180 s (three missed 60 s heartbeats); one every 60 s keeps it alive. */
const PRESENCE_INTERVAL_MS = 60_000;

export class Presence {
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly relay: Pick<RelayClient, "send" | "state">,
    /** Fire-and-forget publishing of the "online" signal (the daemon counts its outcome). */
    private readonly signal: (t: EventTemplate) => void,
  ) {}

  start(): void {
    const announce = () => this.signal(presence("online"));
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
      this.relay.send(presence("offline"), { attempts: 1 }).catch(() => undefined),
      new Promise((r) => setTimeout(r, 1000).unref()),
    ]);
  }
}
