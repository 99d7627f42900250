/**
 * A channel's metadata for a turn, re-read from its 39000 when older than a minute, so a
 * changed description reaches the agent (a running session gets a "settings changed" block)
 * without a reload. A failed read, or a channel archived meanwhile, keeps what the directory
 * knew.
 */
import type { ChannelDirectory, ChannelInfo } from "./directory.js";

/** Channel metadata older than this is re-read before a turn (descriptions change rarely). */
const CHANNEL_METADATA_TTL_MS = 60_000;

export class FreshChannels {
  private readonly readAt = new Map<string, number>();

  constructor(
    private readonly directory: Pick<ChannelDirectory, "get" | "refresh">,
    private readonly ttlMs = CHANNEL_METADATA_TTL_MS,
  ) {}

  async get(id: string): Promise<ChannelInfo | undefined> {
    const known = this.directory.get(id);
    const last = this.readAt.get(id) ?? 0;
    if (!known || Date.now() - last < this.ttlMs) return known;
    this.readAt.set(id, Date.now());
    const info = await this.directory.refresh(id).catch(() => undefined);
    return info && !info.archived ? info : known;
  }
}
