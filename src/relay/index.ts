/**
 * The relay client's public API (docs/protocol.md §5): one `RelayClient` per identity. The
 * Buzz services built on it (`ChannelDirectory`, `ChannelFollower`, `ProfileCache`) are in
 * `buzz/`, the event vocabulary it speaks in `nostr/`:
 *
 * ```ts
 * const client = new RelayClient({ url, secretKey, logger, cursor });
 * const dir = new ChannelDirectory(client, logger).attach();     // follows 44100/44101
 * const follower = new ChannelFollower(client, dir, configSelector(cfg));
 * client.on("event", (ev, ctx) => gate.offer(ev, ctx));          // deduped, NOT yet verified
 * await client.start();
 * await follower.refresh();                                       // discover + ONE REQ; again on SIGHUP
 * const { outcome } = await client.send(events.message(channel, "hi"));
 * ```
 */
export { RelayClient } from "./client.js";
export { RelayConnection, type ConnectionState } from "./connection.js";
export { RelayAuthError } from "./errors.js";
export { probeRelay } from "./probe.js";
