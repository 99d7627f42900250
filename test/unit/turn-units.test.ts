/**
 * src/turn/ on its own: what one turn publishes in the channel (the reply fallback, notices,
 * signals) and how bridge-side stop gates end, with the agent, hooks and publisher given as
 * small in-process implementations of the turn's ports (the daemon-level tests drive the
 * same code through the real relay and agents).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { finalizeEvent, generateSecretKey, getPublicKey, type Event, type EventTemplate } from "nostr-tools";
import { failureNotice, requesters, runTurn, type TurnPorts, type TurnSpec } from "../../src/turn/run.js";
import { enforceStopGates, UNREACHABLE_POLLS } from "../../src/turn/stop-gates.js";
import { EMOJI } from "../../src/turn/signals.js";
import type { AgentTurnResult, HookFanout, PromptBlock } from "../../src/turn/ports.js";
import { KIND } from "../../src/nostr/kinds.js";
import { threadRootOf } from "../../src/nostr/events.js";
import { silentLogger } from "../../src/base/log.js";
import { waitFor } from "../../kit/wait.js";

const sk = generateSecretKey();
const CHANNEL = "4b1d0c3e-0000-4000-8000-000000000001";
const mention = (content: string, who = generateSecretKey()): Event =>
  finalizeEvent({ kind: 9, created_at: 1000, content, tags: [["h", CHANNEL]] }, who);

/** A publisher that signs with a test key; `refuse` makes the relay say no. */
function publisher(o: { refuse?: boolean } = {}) {
  const published: Event[] = [];
  const signals: EventTemplate[] = [];
  return {
    published,
    signals,
    out: {
      publish: async (t: EventTemplate) => {
        if (o.refuse) return null;
        const ev = finalizeEvent(t, sk);
        published.push(ev);
        return ev;
      },
      signal: (t: EventTemplate) => void signals.push(t),
    },
  };
}

function spec(triggers: Event[], over: Partial<TurnSpec> = {}): TurnSpec {
  const anchor = triggers[triggers.length - 1]!;
  return {
    turnId: "1",
    channel: CHANNEL,
    thread: { root: threadRootOf(anchor), parent: anchor.id },
    triggers,
    blocks: [{ type: "text", text: "hello" }],
    replyFallback: "final_text",
    maxReplyBytes: 256 * 1024,
    typing: false,
    enforce: "off",
    gates: { maxRejections: 2, waitPollMs: 10, waitMaxMs: 100, stopModes: {} },
    ...over,
  };
}

function ports(agent: (b: PromptBlock[]) => Promise<AgentTurnResult>, out: TurnPorts["out"], over: Partial<TurnPorts> = {}): TurnPorts {
  return {
    agent: { prompt: (b) => agent(b) },
    hooks: undefined,
    out,
    logger: silentLogger(),
    published: new Set(),
    signal: new AbortController().signal,
    ...over,
  };
}

describe("runTurn: what the channel gets", () => {
  test("an agent that only wrote final text: the bridge posts it once in the thread, mentioning the asker", async () => {
    const ev = mention("@agent hi");
    const p = publisher();
    const o = await runTurn(
      spec([ev]),
      ports(async () => ({ stopReason: "end_turn", finalText: "  the answer  " }), p.out),
    );
    assert.deepEqual({ status: o.status, via: o.status === "answered" ? o.via : undefined }, { status: "answered", via: "fallback" });
    const msgs = p.published.filter((e) => e.kind === KIND.message);
    assert.equal(msgs.length, 1);
    assert.equal(msgs[0]!.content, "the answer");
    assert.deepEqual(
      msgs[0]!.tags.filter((t) => t[0] === "p").map((t) => t[1]),
      [ev.pubkey],
    );
    assert.equal(msgs[0]!.tags.find((t) => t[0] === "e" && t[3] === "reply")?.[1], ev.id);
    assert.deepEqual(o.published, [msgs[0]!.id]);
  });

  test("a final text longer than replies.max_bytes: the fallback posts its start, whole characters, and says it was cut", async () => {
    const ev = mention("@agent write a lot");
    const p = publisher();
    const text = "é😀 and more ".repeat(5000);
    await runTurn(
      spec([ev], { maxReplyBytes: 4096 }),
      ports(async () => ({ stopReason: "end_turn", finalText: text }), p.out),
    );
    const msgs = p.published.filter((e) => e.kind === KIND.message);
    assert.equal(msgs.length, 1, "one message: the cut text fits the relay");
    const posted = msgs[0]!.content;
    assert.ok(Buffer.byteLength(posted) <= 4096, `${Buffer.byteLength(posted)} bytes`);
    assert.match(
      posted,
      /\n\n\[… cut by the bridge: the agent's reply was \d+ bytes, more than one message may carry \(replies\.max_bytes, 4KiB\)\]$/,
    );
    const kept = posted.slice(0, posted.indexOf("\n\n[… cut"));
    assert.ok(text.startsWith(kept) && kept.length > 1000, "the start of the text, no broken character");
    assert.ok(!kept.includes("\uFFFD"));
  });

  test("a reply still on its way when the agent stops: the fallback waits for it and is not posted", async () => {
    const p = publisher();
    const published = new Set<string>();
    let land!: () => void;
    const landed = new Promise<void>((r) => (land = r));
    let waiting = false;
    const o = runTurn(
      spec([mention("@agent hi")]),
      ports(async () => ({ stopReason: "end_turn", finalText: "also the answer" }), p.out, {
        published,
        settled: () => ((waiting = true), landed),
      }),
    );
    await waitFor(() => waiting, { what: "the turn to wait on `settled`" }); // the reply lands while it waits
    published.add("f".repeat(64));
    land();
    const outcome = await o;
    assert.equal(outcome.status === "answered" && outcome.via, "tool");
    assert.equal(p.published.filter((e) => e.kind === KIND.message).length, 0, "no second answer");
  });

  test("the relay refuses the fallback reply: the turn fails (a failure notice follows), nothing counted as published", async () => {
    const o = await runTurn(
      spec([mention("@agent hi")]),
      ports(async () => ({ stopReason: "end_turn", finalText: "answer" }), publisher({ refuse: true }).out),
    );
    assert.equal(o.status, "failed");
    assert.match(o.status === "failed" ? o.reason : "", /refused the fallback reply/);
    assert.deepEqual(o.published, []);
  });

  test("idle timeout and max_turn fail the turn with a reason a user can read; no reply is posted", async () => {
    for (const [kind, re] of [
      ["idle", /no output for too long/],
      ["max_turn", /past its time limit/],
    ] as const) {
      const p = publisher();
      const o = await runTurn(
        spec([mention("@agent hi")]),
        ports(async () => ({ stopReason: "cancelled", finalText: "partial", timedOut: kind }), p.out),
      );
      assert.equal(o.status, "failed");
      assert.match(o.status === "failed" ? o.reason : "", re);
      assert.equal(p.published.filter((e) => e.kind === KIND.message).length, 0);
    }
  });

  test("an owner cancel: cancelled, no reply, and the ⚠️ reaction instead of ✅", async () => {
    const ac = new AbortController();
    const p = publisher();
    const o = await runTurn(
      spec([mention("@agent hi")]),
      ports(
        async () => {
          ac.abort("owner");
          return { stopReason: "cancelled", finalText: "" };
        },
        p.out,
        { signal: ac.signal },
      ),
    );
    assert.equal(o.status, "cancelled");
    assert.equal(p.published.filter((e) => e.kind === KIND.message).length, 0);
    assert.deepEqual(
      p.signals.filter((s) => s.kind === KIND.reaction).map((s) => s.content),
      [EMOJI.seen, EMOJI.failed],
    );
  });

  test("👀 when picked up and ✅ at the end on each trigger of a batch (newest five)", async () => {
    const evs = Array.from({ length: 7 }, (_, i) => mention(`@agent m${i}`));
    const p = publisher();
    const published = new Set(["a".repeat(64)]);
    await runTurn(
      spec(evs),
      ports(async () => ({ stopReason: "end_turn", finalText: "" }), p.out, { published }),
    );
    const reactions = p.signals.filter((s) => s.kind === KIND.reaction);
    const on = (emoji: string) => reactions.filter((r) => r.content === emoji).map((r) => r.tags.find((t) => t[0] === "e")![1]);
    assert.deepEqual(
      on(EMOJI.seen),
      evs.slice(-5).map((e) => e.id),
    );
    assert.deepEqual(
      on(EMOJI.answered),
      evs.slice(-5).map((e) => e.id),
    );
  });

  test("typing indicators in the thread while the turn runs, none after it ended", async (ctx) => {
    // The 3 s typing repeat runs on node:test's mocked setInterval: time is moved by hand,
    // so the test shows the repeat while the turn runs and none after it, with no waiting.
    ctx.mock.timers.enable({ apis: ["setInterval"] });
    const ev = mention("@agent hi");
    const p = publisher();
    const typings = () => p.signals.filter((s) => s.kind === KIND.typing).length;
    const during: number[] = [];
    await runTurn(
      spec([ev], { typing: true }),
      ports(async () => {
        during.push(typings());
        ctx.mock.timers.tick(3_000);
        during.push(typings());
        return { stopReason: "end_turn", finalText: "x" };
      }, p.out),
    );
    assert.deepEqual(during, [1, 2], "one indicator at once, the next 3 s later while the turn runs");
    const typing = p.signals.filter((s) => s.kind === KIND.typing);
    assert.ok(typing.every((t) => t.tags.find((x) => x[0] === "h")?.[1] === CHANNEL));
    const before = p.signals.length;
    ctx.mock.timers.tick(3_000 * 5);
    assert.equal(p.signals.length, before, "the typing timer stopped with the turn");
  });
});

describe("failure notice", () => {
  test("one message in the anchor's thread, tagged agent-failure, mentioning each asker once (at most 50)", () => {
    const who = generateSecretKey();
    const evs = [mention("a", who), mention("b", who), ...Array.from({ length: 60 }, (_, i) => mention(`c${i}`))];
    const t = failureNotice(CHANNEL, { root: evs[0]!.id, parent: evs[1]!.id }, evs, "the agent crashed");
    assert.match(t.content, /^Sorry, I could not answer this: the agent crashed\.$/);
    assert.ok(t.tags.some((x) => x[0] === "buzz" && x[1] === "agent-failure"));
    const ps = t.tags.filter((x) => x[0] === "p").map((x) => x[1]);
    assert.equal(ps.length, 50);
    assert.equal(ps[0], getPublicKey(who));
    assert.equal(new Set(ps).size, 50);
    assert.deepEqual(requesters({ triggers: evs.slice(0, 2) }), [getPublicKey(who)]);
  });
});

describe("enforceStopGates", () => {
  const fan = (servers: Array<Partial<HookFanout["servers"][number]> & { name: string }>): HookFanout => {
    const full = servers.map((s) => ({ ms: 1, verdict: "allow" as const, timed_out: false, text: "", ...s }));
    return {
      text: full.map((s) => s.text).join("\n"),
      verdict: full.some((s) => s.verdict === "object") ? "object" : "allow",
      ms: 1,
      servers: full,
    };
  };
  const base = {
    stopModes: {},
    maxRejections: 2,
    waitPollMs: 5,
    waitMaxMs: 200,
    logger: silentLogger(),
    signal: new AbortController().signal,
  };

  test("a reprompt gate objecting forever: exactly max_rejections re-prompts, then budget-exhausted naming it", async () => {
    const prompts: string[] = [];
    const r = await enforceStopGates(
      { stopReason: "end_turn", finalText: "" },
      {
        ...base,
        agent: {
          prompt: async (b) => (
            prompts.push(b.map((x) => (x.type === "text" ? x.text : "")).join()), { stopReason: "end_turn", finalText: "" }
          ),
        },
        hooks: { runHook: async () => fan([{ name: "tests", verdict: "object", text: "tests fail" }]) },
      },
    );
    assert.equal(r.kind, "budget-exhausted");
    assert.deepEqual(r.kind === "budget-exhausted" && r.objectors, ["tests"]);
    assert.equal(prompts.length, 2);
    assert.match(prompts[0]!, /\[tests\] tests fail/);
  });

  test("two reprompt gates objecting in one round: one re-prompt carrying both texts, in config order", async () => {
    const prompts: string[] = [];
    const r = await enforceStopGates(
      { stopReason: "end_turn", finalText: "" },
      {
        ...base,
        maxRejections: 1,
        agent: {
          prompt: async (b) => (
            prompts.push(b.map((x) => (x.type === "text" ? x.text : "")).join("\n")), { stopReason: "end_turn", finalText: "" }
          ),
        },
        hooks: {
          runHook: async () =>
            fan([
              { name: "ci", verdict: "object", text: "CI is red" },
              { name: "quiet", verdict: "allow", text: "" },
              { name: "docs", verdict: "object", text: " the README lacks the flag \n" },
            ]),
        },
      },
    );
    assert.equal(prompts.length, 1, "one round, one re-prompt, whatever the number of objections");
    assert.match(prompts[0]!, /^Stop gate objection: your turn cannot end yet\. The following gate servers objected/);
    assert.ok(prompts[0]!.endsWith("\n\n[ci] CI is red\n\n[docs] the README lacks the flag"), prompts[0]);
    assert.doesNotMatch(prompts[0]!, /\[quiet\]/, "a gate that allowed is not named");
    assert.equal(r.kind, "budget-exhausted");
    assert.deepEqual(r.kind === "budget-exhausted" && r.objectors, ["ci", "docs"]);
    assert.equal(r.rounds, 1);
  });

  test("a reprompt gate and a wait gate objecting together: the re-prompt carries only the reprompt gate's text", async () => {
    const prompts: string[] = [];
    let calls = 0;
    const waiting: string[][] = [];
    const r = await enforceStopGates(
      { stopReason: "end_turn", finalText: "" },
      {
        ...base,
        stopModes: { approve: "wait", lint: "reprompt" },
        onWaiting: (g) => waiting.push(g),
        agent: {
          prompt: async (b) => (
            prompts.push(b.map((x) => (x.type === "text" ? x.text : "")).join("\n")), { stopReason: "end_turn", finalText: "" }
          ),
        },
        hooks: {
          runHook: async (_h, o) => {
            calls++;
            if (calls === 1)
              return fan([
                { name: "lint", verdict: "object", text: "run the linter" },
                { name: "approve", verdict: "object", text: "a human must approve" },
              ]);
            if (calls === 2) return fan([{ name: "lint" }, { name: "approve", verdict: "object", text: "still waiting" }]);
            assert.deepEqual(o?.servers, ["approve"], "while waiting only the wait gate is asked");
            return fan([{ name: "approve" }]);
          },
        },
      },
    );
    assert.equal(prompts.length, 1);
    assert.match(prompts[0]!, /gate server objected/, "one server named: the singular");
    assert.match(prompts[0]!, /\[lint\] run the linter$/);
    assert.doesNotMatch(prompts[0]!, /approve/);
    assert.deepEqual(waiting, [["approve"]]);
    assert.equal(r.kind, "allowed");
    assert.equal(r.rounds, 1);
    assert.equal(calls, 3);
  });

  test('a wait gate that times out (the proxy answers with its on_error, object by default) is not an approval; one answering "" ends the wait without a model turn', async () => {
    let calls = 0;
    let prompts = 0;
    const r = await enforceStopGates(
      { stopReason: "end_turn", finalText: "" },
      {
        ...base,
        stopModes: { approve: "wait" },
        agent: { prompt: async () => (prompts++, { stopReason: "end_turn", finalText: "" }) },
        hooks: {
          runHook: async () => (++calls < 3 ? fan([{ name: "approve", timed_out: true, verdict: "object" }]) : fan([{ name: "approve" }])),
        },
      },
    );
    assert.equal(r.kind, "allowed");
    assert.equal(calls, 3);
    assert.equal(prompts, 0);
  });

  test(`a wait whose gates cannot be reached ${UNREACHABLE_POLLS} polls in a row ends as unreachable, before wait_max`, async () => {
    let calls = 0;
    const r = await enforceStopGates(
      { stopReason: "end_turn", finalText: "" },
      {
        ...base,
        waitMaxMs: 60_000,
        stopModes: { approve: "wait" },
        agent: { prompt: async () => ({ stopReason: "end_turn", finalText: "" }) },
        hooks: { runHook: async () => (++calls === 1 ? fan([{ name: "approve", verdict: "object", text: "waiting" }]) : fan([])) },
      },
    );
    assert.equal(r.kind, "unreachable", "ended by the unreachable polls, not by wait_max (60 s here)");
    assert.equal(calls, 1 + UNREACHABLE_POLLS);
  });

  test("a turn that did not end normally is never gated", async () => {
    let hooks = 0;
    const r = await enforceStopGates(
      { stopReason: "max_tokens", finalText: "" },
      {
        ...base,
        agent: { prompt: async () => ({ stopReason: "end_turn", finalText: "" }) },
        hooks: { runHook: async () => (hooks++, fan([])) },
      },
    );
    assert.equal(r.kind, "allowed");
    assert.equal(hooks, 0);
  });
});
