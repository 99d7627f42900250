/** Limits shared by the daemon and the buzz tools the proxy shows the agent. */

/** The most pubkeys one message mentions (Buzz's cap; docs/protocol.md). */
export const MENTION_CAP = 50;
