/**
 * Provider failures as a user meets them (docs/agents.md "When the provider fails"), with
 * the real agents by preset — Claude Code (claude-agent-acp) and Codex (codex-acp) — offline
 * against the scripted model (./fixtures/fake-llm.ts) answering with each API's real error
 * status, headers and body:
 * - a refused key (401): one notice in the thread naming the key's variable and `doctor`,
 *   one attempt, no "still working" note; the next mention, the key fixed, is answered;
 * - an overloaded provider (529): retried, then answered once;
 * - a usage limit (429): the scope is held (one notice saying when), the mention answered
 *   once after; `!cancel` ends the wait and the held mention is never answered;
 * - nothing listening at the base URL (Codex): a network failure, retried, then one notice.
 * And the model's true name (agent.provider.model) in the turn's log line, its cost unknown.
 * Each agent runs in one daemon, scenario after scenario (real agents are CPU heavy).
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { World, REPO, type DaemonProc } from "../kit/world.js";
import { waitFor } from "../kit/wait.js";
import { startFakeLlm, providerFailure, type FakeLlm } from "./fixtures/fake-llm.js";
import { KIND } from "../src/nostr/kinds.js";
import { isProgressNote } from "../src/nostr/events.js";

const REPLY = "Hi owner, the answer after the provider came back.";
const TURN_MS = 180_000;
const env = { PATH: `${join(REPO, "node_modules", ".bin")}:${process.env.PATH ?? ""}`, TZ: "UTC" };

interface Agent {
  preset: "claude" | "codex";
  wire: "anthropic" | "openai-responses";
  baseUrl: (origin: string) => string;
  model: string;
  keyVar: string;
}

const CLAUDE: Agent = {
  preset: "claude",
  wire: "anthropic",
  baseUrl: (o) => o,
  model: "claude-gateway-model",
  keyVar: "ANTHROPIC_API_KEY",
};
const CODEX: Agent = {
  preset: "codex",
  wire: "openai-responses",
  baseUrl: (o) => `${o}/v1`,
  model: "gpt-gateway-model",
  keyVar: "OPENAI_API_KEY",
};

function world(a: Agent) {
  const s = {} as { w: World; d: DaemonProc; api: FakeLlm };
  before(async () => {
    s.api = await startFakeLlm({ replyText: REPLY });
    s.w = await World.create({ channelName: "ops-room" });
    s.d = await s.w.startDaemon(
      {
        agent: {
          command: undefined,
          args: undefined,
          preset: a.preset,
          provider: { base_url: a.baseUrl(s.api.url), model: a.model },
          env: { [a.keyVar]: "fake-key" },
          idle_timeout: "120s",
          cancel_grace: "10s",
        },
        // A retry soon, and a limit with no reset time held briefly: the scenarios wait on them.
        queue: { retry_base: "1s", retry_max: "15s" },
        progress: { after: "2s" },
      },
      { env },
    );
  });
  after(async () => {
    await s.w?.close();
    await s.api?.close();
  });
  return s;
}

/** The agent's messages in a mention's thread, read back from the relay. */
async function thread(w: World, root: Event): Promise<Event[]> {
  return w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [root.id] });
}

async function waitThread(w: World, root: Event, what: string, pred: (evs: Event[]) => boolean): Promise<Event[]> {
  let seen: Event[] = [];
  await waitFor(
    async () => {
      seen = await thread(w, root);
      return pred(seen);
    },
    { timeoutMs: TURN_MS, intervalMs: 200, what: () => `${what}; the thread has: ${JSON.stringify(seen.map((e) => e.content))}` },
  );
  return seen;
}

const linesFor = (d: DaemonProc, evt: string, ev: Event) =>
  d.logs.filter((l) => l.evt === evt && JSON.stringify(l.events ?? l.scope ?? "").includes(ev.id));

for (const a of [CLAUDE, CODEX]) {
  const s = world(a);

  test(`${a.preset}: a refused key gets one notice naming ${a.keyVar} and doctor, after one attempt and no still-working note; the next mention is answered`, async () => {
    const { w, d, api } = s;
    api.script({ fail: providerFailure(a.wire, "auth") });
    const ev = await w.owner.post("@agent what changed in the release?");
    const [notice] = await waitThread(w, ev, "the failure notice", (evs) => evs.some((e) => !isProgressNote(e)));
    assert.match(notice!.content, new RegExp(`refused the agent's key in ${a.keyVar}`));
    assert.match(notice!.content, /buzz-bridge doctor/);
    const errors = d.logs.filter((l) => l.evt === "turn.provider_error");
    assert.deepEqual(
      errors.map((l) => l.class),
      ["auth"],
      "one provider error, of class auth",
    );
    assert.equal(linesFor(d, "turn.start", ev).length, 1, "one attempt");
    assert.equal(d.logs.filter((l) => l.evt === "queue.turn_retry").length, 0, "no retry");
    assert.deepEqual(
      (await thread(w, ev)).map((e) => e.content),
      [notice!.content],
      "the notice alone: no still-working note, no second notice",
    );

    api.script({ fail: undefined });
    const next = await w.owner.post("@agent and now?", { replyTo: ev });
    const replies = await waitThread(w, next, "the reply once the key works", (evs) => evs.some((e) => e.content === REPLY));
    assert.equal(replies.filter((e) => e.content === REPLY).length, 1);
    // The model's true name is the provider's (Claude shows its "opus" alias for it); its cost is unknown, not guessed.
    const end = await d.waitLog((l) => l.evt === "turn.end" && JSON.stringify(l.events).includes(next.id), TURN_MS);
    assert.equal(end.model, a.model);
    assert.equal((end.usage as { cost?: unknown } | undefined)?.cost, undefined, "no cost guessed for the gateway's model");
  });

  if (a.preset === "claude")
    test("claude: an overloaded provider (529) is retried, and the mention answered once", async () => {
      const { w, d, api } = s;
      api.script({ fail: providerFailure(a.wire, "overloaded") });
      const ev = await w.owner.post("@agent is the build green?");
      await d.waitLog((l) => l.evt === "turn.provider_error" && l.class === "overloaded", TURN_MS);
      api.script({ fail: undefined });
      const evs = await waitThread(w, ev, "the reply after the retry", (x) => x.some((e) => e.content === REPLY));
      assert.equal(evs.filter((e) => e.content === REPLY).length, 1, "answered once");
      assert.ok(linesFor(d, "turn.start", ev).length >= 2, "retried");
      assert.equal(evs.filter((e) => /could not answer/.test(e.content)).length, 0, "no failure notice");
    });

  test(`${a.preset}: a usage limit holds the scope with one notice; the mention is answered once after${a.preset === "codex" ? ", or, after !cancel, never" : ""}`, async () => {
    const { w, d, api } = s;
    const resetAt = new Date(Date.now() + 20_000);
    api.script({ fail: providerFailure(a.wire, "limit", resetAt) });
    const ev = await w.owner.post("@agent summarise the incident");
    const held = await d.waitLog((l) => l.evt === "turn.held", TURN_MS);
    const until = Date.parse(String(held.until));
    const [notice] = await waitThread(w, ev, "the hold notice", (evs) => evs.some((e) => /limit/.test(e.content)));
    // The time in UTC, and its day when that is not the day of the notice (a hold across midnight).
    const day = new Date(until).toISOString().slice(0, 10);
    const sameDay = day === new Date(notice!.created_at * 1000).toISOString().slice(0, 10);
    const at = `${new Date(until).toISOString().slice(11, 16)} UTC${sameDay ? "" : ` on ${day}`}`;
    if (a.preset === "codex") {
      // Codex says when the limit resets (to the minute): the hold lasts until then.
      assert.equal(notice!.content, `The provider's limit resets at ${at}; I'll answer then.`);
      assert.ok(until >= resetAt.getTime(), "held at least until the reset");
      await w.owner.post("!cancel", { replyTo: ev });
      await d.waitLog((l) => l.evt === "queue.cancelled", TURN_MS);
      api.script({ fail: undefined });
      // Another thread is answered; the cancelled one never is, though its limit is over.
      const other = await w.owner.post("@agent a new question");
      await waitThread(w, other, "the reply in another thread", (x) => x.some((e) => e.content === REPLY));
      assert.deepEqual(
        (await thread(w, ev)).map((e) => e.content),
        [notice!.content],
        "the held mention got its notice and nothing more",
      );
      return;
    }
    // Claude passes on the 429 without its reset time: held for queue.retry_max.
    assert.equal(notice!.content, `The provider's limit is reached and it gave no reset time; I'll try again at ${at}.`);
    assert.ok(isProgressNote(notice!), "the notice is not the answer");
    api.script({ fail: undefined });
    const evs = await waitThread(w, ev, "the reply after the hold", (x) => x.some((e) => e.content === REPLY));
    assert.ok(Date.now() >= until, "answered after the hold");
    assert.equal(evs.filter((e) => e.content === REPLY).length, 1, "answered once");
    assert.equal(evs.filter((e) => /could not answer/.test(e.content)).length, 0, "never dead-lettered");
    assert.equal(linesFor(d, "queue.turn_failed", ev).length, 0);
  });
}

test("codex: nothing listening at the provider's base URL is a network failure, retried, then one failure notice", async () => {
  const closed = await startFakeLlm();
  const origin = closed.url;
  await closed.close();
  const w = await World.create({ channelName: "no-gateway" });
  try {
    const d = await w.startDaemon(
      {
        agent: {
          command: undefined,
          args: undefined,
          preset: "codex",
          provider: { base_url: `${origin}/v1`, model: CODEX.model },
          env: { OPENAI_API_KEY: "fake-key" },
          idle_timeout: "120s",
        },
        queue: { max_attempts: 2, retry_base: "1s", retry_max: "2s" },
      },
      { env },
    );
    const ev = await w.owner.post("@agent anyone there?");
    const [notice] = await waitThread(w, ev, "the failure notice", (evs) => evs.some((e) => /could not answer/.test(e.content)));
    assert.ok(notice);
    const classes = d.logs.filter((l) => l.evt === "turn.provider_error").map((l) => l.class);
    assert.deepEqual(
      classes,
      ["network", "network"],
      `each attempt's failure is a network one: ${JSON.stringify(d.logs.filter((l) => l.evt === "turn.error").map((l) => l.err))}`,
    );
    assert.equal(d.logs.filter((l) => l.evt === "queue.turn_retry").length, 1, "retried as any failure");
  } finally {
    await w.close();
  }
});
