/**
 * Buzz services on top of the relay client (docs/architecture.md §2): the channel directory
 * and the follower that keeps the one subscription in step with it, display names from
 * profiles, presence, and the live channel view of `buzz-bridge tail`.
 */
export { ChannelDirectory, type ChannelInfo } from "./directory.js";
export { ChannelFollower, configSelector } from "./follow.js";
export { ProfileCache, shortNpub } from "./profiles.js";
