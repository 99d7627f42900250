/**
 * `agent.permissions: ask-owner`: the agent's permission request is a question to the owner,
 * asked like any question back to people (questions.ts): a card with the options Allow and
 * Deny, and the plain message "Permission needed: …" that the owner may also answer with a
 * number or with 👍 (allow) / 👎 (deny). The agent runner bounds the wait
 * (`agent.permission_timeout`) and counts silence as deny.
 */
import type * as acp from "@agentclientprotocol/sdk";
import type { CardQuestion } from "../nostr/cards.js";
import type { AskContext, QuestionDesk } from "./questions.js";

/** The permission question as a card. */
export function permissionQuestion(req: acp.RequestPermissionRequest): CardQuestion {
  const what = req.toolCall.title ?? req.toolCall.toolCallId;
  const input = req.toolCall.rawInput === undefined ? "" : `\n\nInput: ${JSON.stringify(req.toolCall.rawInput).slice(0, 500)}`;
  return {
    key: "permission",
    header: "Permission needed",
    prompt: `Permission needed: the agent wants to run "${what}".${input}`,
    multiSelect: false,
    allowCustom: false,
    options: [{ label: "Allow" }, { label: "Deny" }],
  };
}

/** True when the owner allowed it; a deny, decline, cancel or no answer is false. */
export async function askOwnerByCard(
  req: acp.RequestPermissionRequest,
  desk: Pick<QuestionDesk, "ask">,
  ctx: Omit<AskContext, "reactions">,
): Promise<boolean> {
  const [answer] = await desk.ask([permissionQuestion(req)], { ...ctx, reactions: true });
  return answer?.action === "accept" && answer.answer === "Allow";
}
