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
  /** When the agent last said anything, and what (for the status page). */
  lastActivityAt: number | undefined;
  lastActivity: string | undefined;
  /** The latest `usage_update` of the turn: context tokens and the session's cumulative cost. */
  lastUsage: acp.UsageUpdate | undefined;

  apply(update: acp.SessionUpdate): void {
    this.updates++;
    this.lastActivityAt = Date.now();
    this.lastActivity = describeUpdate(update);
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
      case "usage_update":
        this.lastUsage = update;
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

/** A short, bounded description of an update: its kind, and a tool call's title. */
function describeUpdate(update: acp.SessionUpdate): string {
  if (update.sessionUpdate === "tool_call" || update.sessionUpdate === "tool_call_update") {
    const title = "title" in update && update.title ? `: ${update.title.slice(0, 80)}` : "";
    return `${update.sessionUpdate}${title}`;
  }
  return update.sessionUpdate;
}
