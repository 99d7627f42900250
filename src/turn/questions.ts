/**
 * Questions back to people (docs/conversations.md "Questions back to people"): the agent's
 * question — an ACP form elicitation, or a permission request under `agent.permissions:
 * ask-owner` — goes into the turn's thread as question cards (kind 44300, one per
 * question) and, for clients that show no cards, as a plain message with numbered options.
 * The answer is a 44301 on the card, a reply to the plain message (a number, the person's
 * own words, `decline` or `cancel`), or for a permission a 👍/👎 on it — from the one
 * person allowed to answer; anyone else's is ignored and logged.
 *
 * The wait is bounded (its deadline counts from the card's own time) and rebuilt from the
 * relay: a turn that runs again after a restart and asks the same question finds its card
 * in the thread — no second card — and an answer given meanwhile. Answers are read with
 * `/query` every few seconds (the relay is the record; nothing is missed over a
 * reconnect), and an answer the subscription delivers wakes the wait at once.
 */
import { createHash } from "node:crypto";
import type { Event } from "nostr-tools";
import type { Logger } from "../base/log.js";
import { npub } from "../config/keys.js";
import type { RelayPort } from "../relay/port.js";
import { questionCard, readCard, readCardAnswer, type CardAnswer, type CardQuestion } from "../nostr/cards.js";
import { message, QUESTION_TAG, reactionTarget, type ThreadRef } from "../nostr/events.js";
import { FORUM_KINDS, KIND } from "../nostr/kinds.js";
import { nowSec } from "../base/time.js";
import { sleep } from "../base/backoff.js";
import { BoundedMap } from "../base/bounded-map.js";
import { textAnswer } from "./question-form.js";
import { controlCommandOf } from "../gate/decide.js";
import type { Scheduler } from "../queue/index.js";
import type { TurnPublisher } from "./ports.js";

/** How often a waiting question asks the relay for answers. */
const POLL_MS = 2000;

export interface QuestionDeskDeps {
  self: string;
  relay: Pick<RelayPort, "query">;
  /** Publishes the cards and plain questions (not a reply of the turn: an answer still has to come). */
  out: TurnPublisher;
  /** Schnorr check of an answer before it counts. */
  verify(ev: Event): boolean;
  logger: Logger;
  /** Whether other daemons share the queue (its backend says): then a question of ours may be one that another daemon waits on. */
  queue: Pick<Scheduler, "shared">;
  pollMs?: number;
}

export interface AskContext {
  channel: string;
  thread: ThreadRef;
  /** The one person whose answer counts. */
  answerer: string;
  /** Stable for this question of this turn, across a restart (see elicitationKey). */
  key: string;
  timeoutMs: number;
  signal: AbortSignal;
  /** A permission question: 👍 / 👎 on its plain message answer it too. */
  reactions?: boolean;
  /** False while the daemon shuts down: the question stays open for the turn's run after the restart. */
  closeWhenCancelled?: () => boolean;
}

/** The key that finds a question's cards again when the same turn asks it after a restart. */
export function elicitationKey(turnFirstEvent: string, nth: number, what: unknown): string {
  return createHash("sha256")
    .update(`${turnFirstEvent}\n${nth}\n${JSON.stringify(what)}`)
    .digest("hex")
    .slice(0, 32);
}

interface Asked {
  q: CardQuestion;
  card: Event;
  text?: Event;
  answer?: CardAnswer;
}

interface Waiter {
  asked: Asked[];
  inbox: Event[];
  wake: () => void;
  /** Answers from someone not allowed to answer, logged once each. */
  ignored: Set<string>;
}

const YES = new Set(["👍", "+", "✅"]);
const NO = new Set(["👎", "-", "❌"]);

/** Plain question messages of this identity remembered (another daemon of a fleet may be waiting on them). */
const REMEMBERED_QUESTIONS = 1000;

export class QuestionDesk {
  /** Waiting questions by the ids answers refer to (cards and plain messages). */
  private readonly waiting = new Map<string, Waiter>();
  /** This identity's plain question messages seen on the relay, with until when an answer may come (unix ms). */
  private readonly asked = new BoundedMap<string, number>(REMEMBERED_QUESTIONS);

  constructor(private readonly d: QuestionDeskDeps) {}

  /**
   * An event the relay delivered that answers a waiting question (a 44301 on its card, a
   * reply to or reaction on its plain message): taken here, never queued as a mention.
   * `timeoutMs` (`questions.timeout`): how long another daemon may wait on a question of ours.
   */
  offer(ev: Event, o: { timeoutMs?: number } = {}): boolean {
    const answerShaped =
      ev.kind === KIND.questionAnswer || ev.kind === KIND.reaction || ev.kind === KIND.message || FORUM_KINDS.includes(ev.kind);
    if (!answerShaped) return false;
    // Only one daemon uses a queue that is not shared: every question of ours waits here, or nowhere.
    const othersMayAsk = this.d.queue.shared;
    if (ev.pubkey === this.d.self) {
      // A plain question of ours: the daemon whose turn asked it may be another.
      if (othersMayAsk && ev.tags.some((t) => t[0] === QUESTION_TAG[0] && t[1] === QUESTION_TAG[1]))
        this.asked.set(ev.id, ev.created_at * 1000 + (o.timeoutMs ?? 0));
      return false;
    }
    const refs = ev.tags.filter((t) => t[0] === "e" && t[1]).map((t) => t[1]!);
    const w = refs.map((id) => this.waiting.get(id)).find(Boolean);
    if (w) {
      w.inbox.push(ev);
      w.wake();
      return true;
    }
    // A reply to a question another daemon waits on: that daemon reads it from the relay, so
    // this one must not queue it as a new request.
    const parent = replyParent(ev);
    const until = parent === undefined ? undefined : this.asked.get(parent);
    return othersMayAsk && until !== undefined && Date.now() <= until && ev.kind !== KIND.questionAnswer;
  }

  /** Asks `questions` in the thread and waits; one answer per question, cancel for those that got none. */
  async ask(questions: CardQuestion[], ctx: AskContext): Promise<CardAnswer[]> {
    const asked = await this.post(questions, ctx);
    const waiter: Waiter = { asked, inbox: [], wake: () => undefined, ignored: new Set() };
    const ids = asked.flatMap((a) => [a.card.id, ...(a.text ? [a.text.id] : [])]);
    for (const id of ids) this.waiting.set(id, waiter);
    const started = Date.now();
    const deadline = Math.min(...asked.map((a) => a.card.created_at)) * 1000 + ctx.timeoutMs;
    let outcome: "answered" | "timeout" | "cancelled" = "answered";
    try {
      for (;;) {
        await this.collect(waiter, ctx);
        if (asked.every((a) => a.answer)) break;
        if (ctx.signal.aborted) {
          outcome = "cancelled";
          break;
        }
        const left = deadline - Date.now();
        if (left <= 0) {
          outcome = "timeout";
          break;
        }
        const wake = new AbortController();
        waiter.wake = () => wake.abort();
        await sleep(Math.min(left, this.d.pollMs ?? POLL_MS), AbortSignal.any([wake.signal, ctx.signal]));
      }
    } finally {
      for (const id of ids) this.waiting.delete(id);
    }
    for (const a of asked) {
      if (a.answer) continue;
      a.answer = { action: "cancel" };
      this.d.logger.info({
        evt: "question.answered",
        card: a.card.id,
        action: "cancel",
        by: outcome === "timeout" ? "timeout" : "cancel",
        waited_ms: Date.now() - started,
      });
      if (a.text && (outcome === "timeout" || (ctx.closeWhenCancelled?.() ?? true)))
        this.close(a.text, ctx, outcome === "timeout" ? "no answer in time" : "no longer needed");
    }
    return asked.map((a) => a.answer!);
  }

  /** The questions' cards and plain messages: found in the thread (asked before a restart) or posted now. */
  private async post(questions: CardQuestion[], ctx: AskContext): Promise<Asked[]> {
    const earlier = await this.d.relay
      .query([{ kinds: [KIND.questionCard], authors: [this.d.self], "#e": [ctx.thread.root], limit: 100 }])
      .catch(() => [] as Event[]);
    const cards = earlier.filter((e) => readCard(e.content)?.elicitationId === ctx.key);
    const texts = cards.length
      ? await this.d.relay
          .query([{ kinds: [KIND.message, ...FORUM_KINDS], authors: [this.d.self], "#q": cards.map((c) => c.id) }])
          .catch(() => [] as Event[])
      : [];
    const out: Asked[] = [];
    for (const q of questions) {
      const found = cards.find((c) => readCard(c.content)?.questionKey === q.key);
      if (found) {
        out.push({ q, card: found, text: texts.find((t) => t.tags.some((x) => x[0] === "q" && x[1] === found.id)) });
        continue;
      }
      const threadTags = message(ctx.channel, "", { thread: ctx.thread }).tags.filter((t) => t[0] === "e");
      const card = await this.d.out.publish(questionCard(ctx.channel, q, ctx.key, threadTags, ctx.answerer));
      if (!card) throw new Error("the relay refused the question card");
      const text = await this.d.out.publish(
        message(ctx.channel, plainQuestion(q, !!ctx.reactions), {
          thread: ctx.thread,
          mentions: [ctx.answerer],
          extraTags: [["q", card.id], [...QUESTION_TAG]],
        }),
      );
      this.d.logger.info({
        evt: "question.asked",
        card: card.id,
        text: text?.id,
        question: q.key,
        answerer: npub(ctx.answerer),
        timeout_ms: ctx.timeoutMs,
      });
      out.push({ q, card, text: text ?? undefined });
    }
    return out;
  }

  /** Logs, once per event, a reply that is not taken as the answer and why. */
  private ignoreOnce(w: Waiter, target: Asked, ev: Event, reason: "command" | "not-the-answerer" | "bad-signature"): void {
    if (w.ignored.has(ev.id)) return;
    w.ignored.add(ev.id);
    this.d.logger.info({ evt: "question.answer_ignored", card: target.card.id, event: ev.id, author: npub(ev.pubkey), reason });
  }

  /** Reads answers (the relay's, and what the subscription delivered) into the questions still open. */
  private async collect(w: Waiter, ctx: AskContext): Promise<void> {
    const open = w.asked.filter((a) => !a.answer);
    if (!open.length) return;
    const cardIds = open.map((a) => a.card.id);
    const textIds = open.flatMap((a) => (a.text ? [a.text.id] : []));
    const filters: import("nostr-tools").Filter[] = [{ kinds: [KIND.questionAnswer], "#e": cardIds }];
    if (textIds.length) filters.push({ kinds: [KIND.message, ...FORUM_KINDS, ...(ctx.reactions ? [KIND.reaction] : [])], "#e": textIds });
    const polled = await this.d.relay.query(filters).catch(() => [] as Event[]);
    const events = [...w.inbox.splice(0), ...polled].sort((a, b) => a.created_at - b.created_at || a.id.localeCompare(b.id));
    const seen = new Set<string>();
    for (const ev of events) {
      if (seen.has(ev.id) || ev.pubkey === this.d.self) continue;
      seen.add(ev.id);
      const target = open.find((a) => !a.answer && answers(ev, a));
      if (!target) continue;
      // A control command is the gate's (the owner's `!cancel` runs there), never an answer;
      // a reply in the question's thread counts as addressed to the agent.
      if (controlCommandOf(ev, this.d.self, () => true)) {
        this.ignoreOnce(w, target, ev, "command");
        continue;
      }
      if (ev.pubkey !== ctx.answerer || !this.d.verify(ev)) {
        this.ignoreOnce(w, target, ev, ev.pubkey !== ctx.answerer ? "not-the-answerer" : "bad-signature");
        continue;
      }
      const answer = readAnswer(ev, target, !!ctx.reactions);
      if (!answer) continue;
      target.answer = answer;
      this.d.logger.info({
        evt: "question.answered",
        card: target.card.id,
        action: answer.action,
        by: npub(ev.pubkey),
        via: ev.kind === KIND.questionAnswer ? "card" : ev.kind === KIND.reaction ? "reaction" : "text",
        waited_ms: Date.now() - target.card.created_at * 1000,
      });
    }
  }

  /** The plain message says the question is closed, so nobody answers into the void. */
  private close(text: Event, ctx: AskContext, why: string): void {
    this.d.out.signal({
      kind: KIND.edit,
      created_at: nowSec(),
      content: `${text.content}\n\n(Closed: ${why}.)`,
      tags: [
        ["h", ctx.channel],
        ["e", text.id],
      ],
    });
  }
}

/** Whether `ev` is an answer to this question (on its card, or to its plain message). */
function answers(ev: Event, a: Asked): boolean {
  if (ev.kind === KIND.questionAnswer) return ev.tags.some((t) => t[0] === "e" && t[1] === a.card.id);
  if (!a.text) return false;
  if (ev.kind === KIND.reaction) return reactionTarget(ev) === a.text.id;
  return replyParent(ev) === a.text.id;
}

/** The message a reply answers: its `reply`-marked `e` tag, else its last `e`. */
function replyParent(ev: Event): string | undefined {
  return ev.tags.find((t) => t[0] === "e" && t[3] === "reply")?.[1] ?? ev.tags.filter((t) => t[0] === "e").at(-1)?.[1];
}

function readAnswer(ev: Event, a: Asked, reactions: boolean): CardAnswer | undefined {
  if (ev.kind === KIND.questionAnswer) return readCardAnswer(ev.content);
  if (ev.kind === KIND.reaction) {
    if (!reactions) return undefined;
    const emoji = ev.content.trim();
    if (YES.has(emoji)) return { action: "accept", answer: a.q.options[0]!.label };
    if (NO.has(emoji)) return { action: "accept", answer: a.q.options[1]!.label };
    return undefined;
  }
  return textAnswer(a.q, ev.content);
}

/** The question as a plain message, for clients that show no cards. */
export function plainQuestion(q: CardQuestion, reactions: boolean): string {
  const head = q.header && !q.prompt.startsWith(q.header) ? `${q.header}: ${q.prompt}` : q.prompt;
  const lines = [reactions ? head : `Question from the agent: ${head}`];
  q.options.forEach((o, i) => lines.push(`${i + 1}. ${o.label}${o.description ? ` — ${o.description}` : ""}`));
  const how = q.options.length
    ? `Reply to this message with ${q.multiSelect ? "the numbers of your answers" : "the number of your answer"}${q.allowCustom ? " or your own answer" : ""}`
    : "Reply to this message with your answer";
  lines.push(`${how}; "decline" to skip it, "cancel" to refuse.${reactions ? " Or react 👍 to allow, 👎 to deny." : ""}`);
  return lines.join("\n");
}
