/**
 * One turn's questions back to people (docs/conversations.md "Questions back to people"):
 * the callbacks the agent runner calls when the agent asks — a form elicitation
 * (`questions.answered_by` answers it, within `questions.timeout`) or, under
 * `agent.permissions: ask-owner`, a permission request (the owner answers) — both asked
 * through the one question desk in the turn's thread.
 */
import type * as acp from "@agentclientprotocol/sdk/unstable";
import type { PromptOptions } from "../agent/turn-control.js";
import type { Logger } from "../base/log.js";
import type { ThreadRef } from "../nostr/events.js";
import { askOwnerByCard } from "./ask-owner.js";
import { formFields, formResponse } from "./question-form.js";
import { elicitationKey, type QuestionDesk } from "./questions.js";

export interface TurnAskingOptions {
  channel: string;
  thread: ThreadRef;
  owner: string | undefined;
  /** Who asked for this turn (the reply anchor's author). */
  requester: string;
  answeredBy: "owner" | "requester";
  /** The turn's first message: with the question itself, what finds its card again after a restart. */
  firstEvent: string;
  questionTimeoutMs: number;
  permissionTimeoutMs: number;
  /** True while the daemon shuts down (an open question then stays open for the restart). */
  shuttingDown: () => boolean;
  logger: Logger;
}

export function turnAsking(desk: QuestionDesk, o: TurnAskingOptions): Pick<PromptOptions, "askOwner" | "askQuestion"> {
  // The nth time this turn asks the very same question is its own question (and card).
  const seen = new Map<string, number>();
  const keyOf = (what: unknown) => {
    const id = JSON.stringify(what);
    const nth = seen.get(id) ?? 0;
    seen.set(id, nth + 1);
    return elicitationKey(o.firstEvent, nth, what);
  };
  const base = { channel: o.channel, thread: o.thread, closeWhenCancelled: () => !o.shuttingDown() };
  const owner = o.owner;
  return {
    askOwner: owner
      ? (req, signal) =>
          askOwnerByCard(req, desk, {
            ...base,
            answerer: owner,
            key: keyOf({ permission: req.toolCall.title ?? req.toolCall.toolCallId, input: req.toolCall.rawInput ?? null }),
            timeoutMs: o.permissionTimeoutMs,
            signal,
          })
      : undefined,
    askQuestion: async (req, signal): Promise<acp.CreateElicitationResponse> => {
      if (req.mode !== "form") return { action: "cancel" };
      const form = req as acp.CreateElicitationRequest & { requestedSchema?: unknown };
      const fields = formFields(form.requestedSchema, req.message);
      const answerer = o.answeredBy === "requester" ? o.requester : owner;
      if (!fields.length || !answerer) {
        o.logger.warn(
          { evt: "question.not_asked", fields: fields.length, answered_by: o.answeredBy },
          fields.length
            ? "no owner to answer the agent's question (identity.owner); it is cancelled"
            : "the agent's question has no fields to ask",
        );
        return { action: "cancel" };
      }
      const answers = await desk.ask(
        fields.map((f) => f.question),
        { ...base, answerer, key: keyOf({ message: req.message, schema: form.requestedSchema }), timeoutMs: o.questionTimeoutMs, signal },
      );
      // Shutting down: the agent is not told "cancel" (it might act on it and answer the
      // mention); the turn runs again after the restart and finds the question's card.
      if (o.shuttingDown()) return new Promise<never>(() => undefined);
      return formResponse(fields, answers);
    },
  };
}
