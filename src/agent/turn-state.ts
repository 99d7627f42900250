/**
 * What a turn produced, folded from its `session/update`s in arrival order: the text of
 * the agent's LAST message (for `reply_fallback: final_text`), whether the context was
 * compacted (for a `_PostCompact` gate) and how many tool calls ran.
 */
import type * as acp from "@agentclientprotocol/sdk/unstable";

export class TurnState {
  private messages: string[] = [];
  private inMessage = false;
  private lastMessageId: string | null | undefined;
  private readonly toolCallIds = new Set<string>();
  compacted = false;
  updates = 0;

  apply(update: acp.SessionUpdate): void {
    this.updates++;
    switch (update.sessionUpdate) {
      case "agent_message_chunk": {
        const id = update.messageId;
        // A new message starts after anything that is not part of the text stream, or on a new id.
        const fresh = !this.inMessage || (id != null && this.lastMessageId != null && id !== this.lastMessageId);
        if (fresh) this.messages.push("");
        this.inMessage = true;
        this.lastMessageId = id;
        if (update.content.type === "text") this.messages[this.messages.length - 1] += update.content.text;
        break;
      }
      case "tool_call":
      case "tool_call_update":
        // Gemini sends updates for ids it never announced: count those as calls too.
        this.toolCallIds.add(update.toolCallId);
        this.inMessage = false;
        break;
      case "user_message_chunk":
        this.inMessage = false;
        break;
      case "compaction_update":
        if (update.status === "completed") this.compacted = true;
        break;
      default:
        // thoughts, plans, usage and mode updates do not split the agent's message
        break;
    }
  }

  /** The last agent message, trimmed; "" when the agent wrote none. */
  get finalText(): string {
    for (let i = this.messages.length - 1; i >= 0; i--) {
      const t = this.messages[i]!.trim();
      if (t) return t;
    }
    return "";
  }

  get toolCalls(): number {
    return this.toolCallIds.size;
  }
}
