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
export {
  RelayClient,
  type RelayClientOptions,
  type RelayClientEvents,
  type EventContext,
  type MembershipChange,
  type CursorProvider,
} from "./client.js";
export { RelayConnection, type ConnectionOptions, type ConnectionState, type ConnectionEvents, type SendOptions } from "./connection.js";
export { ChannelDirectory, channelInfoOf, channelTypeOf, type ChannelInfo, type ChannelType, type DirectorySource } from "./directory.js";
export { ChannelFollower, configSelector, type ChannelSelector } from "./follow.js";
export { ProfileCache, profileOf, shortNpub, type Profile, type ProfileCacheOptions } from "./profiles.js";
export { RelayHttp, type RelayHttpOptions, type EventsWriteResult } from "./http.js";
export { nip98Header, nip98Template } from "./nip98.js";
export { initCrypto, verifySignature, signEvent, verifyStats } from "./verify.js";
export { publishWithRetry, type PublishOptions } from "./publish.js";
export { isRetryable, isSuccess, outcomeFromOk, type PublishOutcome, type PublishStatus } from "./outcome.js";
export { channelFilters, membershipFilter, isRequested, SUB_CHANNELS, SUB_MEMBERSHIP, type ChannelSubscription } from "./filters.js";
export { TwoGenerationDedupe } from "./dedupe.js";
export { Backoff, retryAfterMs, reasonPrefix, type BackoffOptions } from "../base/backoff.js";
export { relayTagUrl, httpOrigin, authTemplate } from "./auth.js";
export { eventShapeProblem } from "./validate.js";
export { RelayAuthError, RelayHttpError, RelayQueryError, RelayUsageError, RelayUnreachableError } from "./errors.js";
export { FrameBudget, BUZZ_FRAME_QUOTA, priorityOfKind, type FramePriority, type FrameQuota } from "./frame-budget.js";
export { Coalescer, type CoalesceOptions } from "./coalesce.js";
export { splitContent, MAX_CONTENT_BYTES } from "./split.js";
export { probeRelay } from "./probe.js";
export * from "./kinds.js";
export * as events from "./events.js";
