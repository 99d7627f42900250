/**
 * Question cards (docs/conversations.md "Questions back to people"; docs/protocol.md §4),
 * as the Rust bridge's elicitation work defines them: one kind 44300 card per question, its
 * content a JSON form `{v: 1, questionKey, header?, prompt, multiSelect, allowCustom,
 * options: [{label, description?}], elicitationId}`, `p`-tagging who may answer; an answer is
 * a kind 44301 whose `e` tag names the card and whose content is `{action: accept | decline
 * | cancel, answer?: label | labels, custom?: text}`. Anything unreadable counts as cancel.
 */
import type { EventTemplate } from "nostr-tools";
import { KIND } from "./kinds.js";
import { nowSec } from "../base/time.js";

export interface CardOption {
  label: string;
  description?: string;
}

/** One question of a card, and how it maps back to the agent's form field. */
export interface CardQuestion {
  /** The form field (`question_0`, …). */
  key: string;
  header?: string;
  prompt: string;
  multiSelect: boolean;
  allowCustom: boolean;
  options: CardOption[];
}

export type CardAnswer = { action: "accept"; answer?: string | string[]; custom?: string } | { action: "decline" } | { action: "cancel" };

/** The card's JSON content. */
export function cardContent(q: CardQuestion, elicitationId: string): string {
  return JSON.stringify({
    v: 1,
    questionKey: q.key,
    ...(q.header ? { header: q.header } : {}),
    prompt: q.prompt,
    multiSelect: q.multiSelect,
    allowCustom: q.allowCustom,
    options: q.options,
    elicitationId,
  });
}

/** A card's question key and elicitation id, when its content is a card's. */
export function readCard(content: string): { questionKey: string; elicitationId: string } | undefined {
  try {
    const c = JSON.parse(content) as { questionKey?: unknown; elicitationId?: unknown };
    return typeof c.questionKey === "string" && typeof c.elicitationId === "string"
      ? { questionKey: c.questionKey, elicitationId: c.elicitationId }
      : undefined;
  } catch {
    return undefined;
  }
}

/** A kind 44300 card in a thread, for `answerer`. */
export function questionCard(
  channel: string,
  q: CardQuestion,
  elicitationId: string,
  threadTags: string[][],
  answerer: string,
): EventTemplate {
  return {
    kind: KIND.questionCard,
    created_at: nowSec(),
    content: cardContent(q, elicitationId),
    tags: [["h", channel], ...threadTags, ["p", answerer]],
  };
}

/** A 44301's content as an answer; fail closed: anything else is cancel. */
export function readCardAnswer(content: string): CardAnswer {
  let c: { action?: unknown; answer?: unknown; custom?: unknown };
  try {
    c = JSON.parse(content) as typeof c;
  } catch {
    return { action: "cancel" };
  }
  if (c?.action === "decline") return { action: "decline" };
  if (c?.action !== "accept") return { action: "cancel" };
  const answer =
    typeof c.answer === "string"
      ? c.answer
      : Array.isArray(c.answer) && c.answer.every((x) => typeof x === "string")
        ? (c.answer as string[])
        : undefined;
  const custom = typeof c.custom === "string" && c.custom.trim() ? c.custom : undefined;
  return { action: "accept", ...(answer !== undefined ? { answer } : {}), ...(custom ? { custom } : {}) };
}

/** A 44301 answer to a card (what a client without card support cannot send; tests and tools use it). */
export function cardAnswer(card: { id: string }, answer: CardAnswer, channel?: string): EventTemplate {
  const tags = [["e", card.id, "", "reply"]];
  if (channel) tags.push(["h", channel]);
  return { kind: KIND.questionAnswer, created_at: nowSec(), content: JSON.stringify(answer), tags };
}
