/**
 * The relay client's public API (docs/protocol.md §5). The daemon builds one `RelayClient`, a
 * `ChannelDirectory` on top of it, and a `ProfileCache` for names:
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
export { ChannelDirectory, type ChannelInfo } from "./directory.js";
export { ChannelFollower, configSelector } from "./follow.js";
export { ProfileCache, shortNpub } from "./profiles.js";
export { initCrypto, verifyStats } from "./verify.js";
export { RelayAuthError } from "./errors.js";
export { probeRelay } from "./probe.js";
export * from "./kinds.js";
export * as events from "./events.js";
