/**
 * One built-in buzz tool call on the daemon's side, whichever way it arrived: over the
 * link from a stdio proxy, or from the daemon's own HTTP endpoint. The arguments are
 * checked against the contract's schemas (the ones the agent was shown), then the
 * session's handlers run it; every error message is one the agent can act on.
 */
import type { z } from "zod";
import { BUZZ_LINK_ARGS, BUZZ_TOOL_ARGS, type BuzzToolArgs, type BuzzToolName } from "../contract/buzz-tool-schemas.js";

/** Implemented by the daemon per session, scoped to its channel (createBuzzTools, turn/buzz-tool-handlers.ts). */
export interface BuzzToolHandlers {
  /** `queued` (and an empty event_id): held for a gate's approval (`hold_replies`), not posted yet. */
  sendMessage(a: BuzzToolArgs["send_message"]): Promise<{ event_id: string; queued?: string }>;
  addReaction(a: BuzzToolArgs["add_reaction"]): Promise<{ event_id: string }>;
  getMessages(a: BuzzToolArgs["get_messages"]): Promise<unknown>;
  getThread(a: BuzzToolArgs["get_thread"]): Promise<unknown>;
  getChannel(): Promise<unknown>;
}

/**
 * The call is not one the tools accept: an unknown tool, or arguments that break its schema.
 * `argSchemas`: what the agent was shown; over the link, BUZZ_LINK_ARGS (the stdio proxy has
 * read the files a send_message attaches and sends their bytes, not their paths).
 */
export function checkBuzzCall(
  tool: unknown,
  args: unknown,
  argSchemas: Record<BuzzToolName, z.ZodType> = BUZZ_TOOL_ARGS,
): { tool: BuzzToolName; args: Record<string, unknown> } | { error: string } {
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
 * `readFiles` turns send_message's attachments (paths) into files (bytes) where the agent's
 * files are (proxy/attachment-reader.ts): the daemon never opens a path an agent names.
 * Without it a send_message that attaches something is refused.
 */
export function directBuzzTools(
  tools: BuzzToolHandlers,
  onFailure: (tool: BuzzToolName, error: string) => void,
  readFiles?: (args: Record<string, unknown>) => Promise<Record<string, unknown>>,
): { callBuzzTool(tool: BuzzToolName, args: Record<string, unknown>): Promise<unknown> } {
  return {
    async callBuzzTool(tool, args) {
      const checked = checkBuzzCall(tool, args);
      if ("error" in checked) throw new BuzzCallError(checked.error);
      let call = checked;
      const attaches = call.tool === "send_message" && Array.isArray(call.args.attachments) && call.args.attachments.length > 0;
      if (attaches && !readFiles)
        throw new BuzzCallError("send_message: this bridge cannot read attached files here; send the message without them");
      try {
        if (attaches) {
          // Checked again as the link checks what a stdio proxy sends: the files as bytes.
          const read = checkBuzzCall(call.tool, await readFiles!(call.args), BUZZ_LINK_ARGS);
          if ("error" in read) throw new BuzzCallError(read.error);
          call = read;
        }
        return await dispatchBuzzTool(tools, call.tool, call.args);
      } catch (err) {
        onFailure(call.tool, (err as Error).message);
        throw err;
      }
    },
  };
}
