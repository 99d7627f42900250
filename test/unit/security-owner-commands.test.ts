/**
 * The owner's `!cancel` typed as the reply to the agent's question — to its question card or
 * to its plain question message — is the owner's command, not the answer "!cancel": the
 * turn's wait ends cancelled and the 40099 outcome is published. The real intake, gate
 * decision, control executor and question desk, in process; the relay is a list of signed
 * events answered with NIP-01 filter matching.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { finalizeEvent, verifyEvent, type Event, type EventTemplate } from "nostr-tools";
import { matchFilter, type Filter } from "nostr-tools/filter";
import { Intake } from "../../src/intake/intake.js";
import { QuestionDesk } from "../../src/turn/questions.js";
import { decide, type GateContext } from "../../src/gate/decide.js";
import { ControlExecutor, type ControlTarget } from "../../src/gate/control.js";
import { KIND } from "../../src/nostr/kinds.js";
import type { CardAnswer } from "../../src/nostr/cards.js";
import { agent, CHANNEL, captureLogger, fromWire, makeConfig, mention, owner } from "../../kit/queue-helpers.js";
import { waitFor } from "../../kit/wait.js";

function world() {
  const relay: Event[] = [];
  /** The threads the agent is in (participation): its mention's thread once it is asked. */
  const activeRoots = new Set<string>();
  const { logger, lines } = captureLogger("debug");
  const published: EventTemplate[] = [];
  const publish = async (t: EventTemplate) => {
    published.push(t);
    const ev = finalizeEvent({ ...t, created_at: t.created_at || Math.floor(Date.now() / 1000) }, agent.sk);
    relay.push(ev);
    return ev;
  };
  const query = async (filters: Filter[]) => relay.filter((e) => filters.some((f) => matchFilter(f, e)));
  const desk = new QuestionDesk({
    self: agent.pk,
    relay: { query } as never,
    out: { publish, signal: () => undefined },
    verify: (e) => verifyEvent(e),
    logger,
    queue: { shared: false },
    pollMs: 50,
  });
  const turn = new AbortController();
  const cancelled: ControlTarget[] = [];
  const control = new ControlExecutor({
    self: agent.pk,
    actions: {
      cancel: async (target) => {
        cancelled.push(target);
        turn.abort();
        return 1;
      },
      rotate: async () => 0,
      status: async () => ({ inFlight: 1, queued: 0 }),
      shutdown: () => undefined,
    },
    publish,
    logger,
  });
  const ctx: GateContext = {
    self: agent.pk,
    owner: owner.pk,
    config: makeConfig({ defaults: { respond_to: "owner-only" } }),
    channel: (id) => (id === CHANNEL ? { id, name: "general", type: "stream" } : undefined),
    handled: () => false,
    verify: (e) => verifyEvent(e),
    participation: {
      active: { isThreadActive: (r, ch) => ch === CHANNEL && activeRoots.has(r), isChannelActive: () => false, rebuilding: undefined },
      isAgent: async () => false,
    },
  };
  const intake = new Intake({
    gate: {
      decide: (e) => decide(e, ctx),
      recheck: () => undefined,
      act: async (e, d) => {
        if (d.action === "control") await control.execute(e, d.command, d.channel.id);
      },
    },
    scheduler: {
      accept: async () => true,
      scopeOf: (_e, ch) => ({ key: ch, channel: ch }) as never,
      runningTurn: () => undefined,
      joinRunning: () => undefined,
    },
    dispatcher: { canTake: () => false, take: () => undefined },
    amendments: { edit: async () => undefined, delete: async () => undefined } as never,
    questions: desk,
    active: { mark: (r) => void activeRoots.add(r), isThreadActive: (r, ch) => ch === CHANNEL && activeRoots.has(r) },
    self: agent.pk,
    local: { noteSeen: () => undefined, markAccepted: () => undefined },
    owner: () => owner.pk,
    stopping: () => false,
    logger,
  });
  return { relay, activeRoots, lines, published, desk, turn, cancelled, intake };
}

/** The owner's mention the turn answers, and the question the agent asks in its thread. */
async function asking(w: ReturnType<typeof world>) {
  const root = fromWire(mention(owner, "@agent deploy it"));
  w.relay.push(root);
  w.activeRoots.add(root.id);
  const answer: Promise<CardAnswer[]> = w.desk.ask(
    [
      {
        key: "question_0",
        prompt: "Deploy to production?",
        multiSelect: false,
        allowCustom: false,
        options: [{ label: "Yes" }, { label: "No" }],
      },
    ],
    {
      channel: CHANNEL,
      thread: { root: root.id, parent: root.id },
      answerer: owner.pk,
      key: "k1",
      timeoutMs: 600_000,
      signal: w.turn.signal,
    },
  );
  await waitFor(() => w.relay.some((e) => e.kind === KIND.message && e.pubkey === agent.pk));
  const card = w.relay.find((e) => e.kind === KIND.questionCard)!;
  const text = w.relay.find((e) => e.kind === KIND.message && e.pubkey === agent.pk)!;
  return { root, card, text, answer };
}

describe("the owner's !cancel as the reply to the agent's question", () => {
  async function cancelAsReplyTo(to: "card" | "text") {
    const w = world();
    const q = await asking(w);
    const parent = to === "card" ? q.card : q.text;
    const cancel = fromWire(
      mention(owner, "!cancel", {
        tags: [
          ["e", q.root.id, "", "root"],
          ["e", parent.id, "", "reply"],
        ],
      }),
    );
    w.relay.push(cancel);
    await w.intake.handle(cancel);
    const answers = await q.answer;
    assert.deepEqual(answers, [{ action: "cancel" }]);
    assert.deepEqual(w.cancelled, [{ channel: CHANNEL, thread: q.root.id }]);
    const outcomes = w.published.filter((t) => t.kind === KIND.system).map((t) => JSON.parse(t.content));
    assert.equal(outcomes.length, 1, JSON.stringify(outcomes));
    assert.equal(outcomes[0].type, "control.cancel");
    assert.equal(outcomes[0].actor, owner.pk);
    const taken = w.lines.filter((l) => l.evt === "question.answered" && l.via);
    assert.deepEqual(taken, [], "no answer was taken from the command");
  }

  test('to the plain question message: the turn is cancelled with its 40099, not answered "!cancel"', () => cancelAsReplyTo("text"));
  test('to the question card: the turn is cancelled with its 40099, not answered "!cancel"', () => cancelAsReplyTo("card"));

  test("without tagging the agent, in the thread of the question: still the command", async () => {
    const w = world();
    const q = await asking(w);
    const cancel = fromWire(
      mention(owner, "!cancel", {
        mention: false,
        tags: [
          ["e", q.root.id, "", "root"],
          ["e", q.text.id, "", "reply"],
        ],
      }),
    );
    w.relay.push(cancel);
    await w.intake.handle(cancel);
    assert.deepEqual(await q.answer, [{ action: "cancel" }]);
    assert.equal(w.lines.filter((l) => l.evt === "question.answer_ignored" && l.reason === "command").length, 1);
  });
});
