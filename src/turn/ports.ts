/**
 * What a turn needs from the rest of the daemon, as small interfaces. The turn never
 * reaches back into the relay, queue or agent pool directly: the daemon hands it these.
 */
import type { Event, EventTemplate } from "nostr-tools";
import type { HookFanout } from "../contract/hooks.js";
import type { PromptBlock } from "../prompt/text.js";

export type { HookFanout } from "../contract/hooks.js";

export type { PromptBlock, TextBlock } from "../prompt/text.js";

export interface AgentTurnResult {
  stopReason: string;
  /** Text of the agent's last message (concatenated agent_message_chunk text). */
  finalText: string;
  /** The agent reported a completed compaction during the turn. */
  compacted?: boolean;
  /** Set when the runner cancelled the turn for a timeout. */
  timedOut?: "idle" | "max_turn";
}

/** One agent session, as the turn drives it. */
export interface TurnAgent {
  prompt(blocks: PromptBlock[], signal?: AbortSignal): Promise<AgentTurnResult>;
}

/** The session's proxy, reached over the link. */
export interface TurnHooks {
  runHook(name: "_Stop" | "_PostCompact", opts?: { servers?: string[] }): Promise<HookFanout>;
}

/**
 * Signs and publishes; resolves to the published event, or null when the relay refused.
 * `beforePublish` runs between signing and sending (a fleet records the id durably there).
 */
export interface TurnPublisher {
  publish(template: EventTemplate, opts?: { beforePublish?(ev: Event): Promise<void> }): Promise<Event | null>;
  /** Fire-and-forget signals (typing, reactions): never fail a turn. */
  signal(template: EventTemplate): void;
}
