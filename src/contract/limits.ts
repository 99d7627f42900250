/** Limits shared by the daemon and the buzz tools the proxy shows the agent. */
import { formatSize } from "../config/size.js";

/** The most pubkeys one message mentions (Buzz's cap; docs/protocol.md). */
export const MENTION_CAP = 50;

/**
 * The tool error for a send_message whose content is over `replies.max_bytes`: the same
 * words whether the proxy refuses it before it crosses the link or the daemon does.
 */
export function contentTooLong(bytes: number, max: number): string {
  return `content is ${bytes} bytes; one message takes at most ${max} bytes (${formatSize(max)}, the bridge's replies.max_bytes): shorten it, or post a summary and keep the rest in a file`;
}

/** The tool error for a send_message over the turn's allowance (`replies.max_per_turn`). */
export function tooManyMessages(max: number): string {
  return `this turn has already sent ${max} messages, the most one turn may send (the bridge's replies.max_per_turn); say the rest in fewer, longer messages in your next turn`;
}
