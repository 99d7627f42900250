/**
 * One built-in buzz tool call on the daemon's side, whichever way it arrived: over the
 * link from a stdio proxy, or from the daemon's own HTTP endpoint. The arguments are
 * checked against the contract's schemas (the ones the agent was shown), then the
 * session's handlers run it; every error message is one the agent can act on.
 */
import { BUZZ_TOOL_ARGS as argSchemas, type BuzzToolArgs, type BuzzToolName } from "../contract/buzz-tools.js";

/** Implemented by the daemon per session, scoped to its channel (see createBuzzTools). */
export interface BuzzToolHandlers {
  sendMessage(a: BuzzToolArgs["send_message"]): Promise<{ event_id: string }>;
  addReaction(a: BuzzToolArgs["add_reaction"]): Promise<{ event_id: string }>;
  getMessages(a: BuzzToolArgs["get_messages"]): Promise<unknown>;
  getThread(a: BuzzToolArgs["get_thread"]): Promise<unknown>;
  getChannel(): Promise<unknown>;
}

/** The call is not one the tools accept: an unknown tool, or arguments that break its schema. */
export function checkBuzzCall(tool: unknown, args: unknown): { tool: BuzzToolName; args: Record<string, unknown> } | { error: string } {
  if (typeof tool !== "string" || !(tool in argSchemas)) return { error: `unknown buzz tool '${String(tool)}'` };
  const name = tool as BuzzToolName;
  const parsed = argSchemas[name].safeParse(args ?? {});
  if (!parsed.success)
    return { error: `${name}: ${parsed.error.issues.map((i) => `${i.path.join(".") || "arguments"}: ${i.message}`).join("; ")}` };
  return { tool: name, args: parsed.data as Record<string, unknown> };
}

export function dispatchBuzzTool(tools: BuzzToolHandlers, tool: BuzzToolName, args: Record<string, unknown>): Promise<unknown> {
  switch (tool) {
    case "send_message":
      return tools.sendMessage(args as BuzzToolArgs["send_message"]);
    case "add_reaction":
      return tools.addReaction(args as BuzzToolArgs["add_reaction"]);
    case "get_messages":
      return tools.getMessages(args as BuzzToolArgs["get_messages"]);
    case "get_thread":
      return tools.getThread(args as BuzzToolArgs["get_thread"]);
    case "get_channel":
      return tools.getChannel();
  }
}

class BuzzCallError extends Error {
  override name = "BuzzCallError";
}

/**
 * The session's tools as the in-daemon aggregator calls them (no link in between): checked,
 * run, and a failure of the handler reported to `onFailure` before the agent gets its message.
 */
export function directBuzzTools(
  tools: BuzzToolHandlers,
  onFailure: (tool: BuzzToolName, error: string) => void,
): { callBuzzTool(tool: BuzzToolName, args: Record<string, unknown>): Promise<unknown> } {
  return {
    async callBuzzTool(tool, args) {
      const call = checkBuzzCall(tool, args);
      if ("error" in call) throw new BuzzCallError(call.error);
      try {
        return await dispatchBuzzTool(tools, call.tool, call.args);
      } catch (err) {
        onFailure(call.tool, (err as Error).message);
        throw err;
      }
    },
  };
}
