/**
 * src/turn/stop-gates.ts in process, beside turn-units' rounds and budgets: what the agent
 * is re-prompted with, what a wait gate that is not running counts as and how it is
 * reported (once per gate and turn), how a wait ends (approval, wait_max, cancel, a proxy
 * that is gone), and the `gate.round` line an operator reads. The daemon tests (gates-*)
 * show the same end to end; these reach every branch in milliseconds.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { HookFanout } from "../../src/contract/hooks.js";
import { enforceStopGates, UNREACHABLE_POLLS, waitGatesOf, type StopGateOptions } from "../../src/turn/stop-gates.js";
import type { PromptBlock } from "../../src/turn/ports.js";
import { captureLogger } from "../../kit/queue-helpers.js";

type Server = Partial<HookFanout["servers"][number]> & { name: string };

const fan = (servers: Server[], ms = 7): HookFanout => {
  const full = servers.map((s) => ({ ms: 1, verdict: "allow" as const, timed_out: false, text: "", ...s }));
  return { text: "", verdict: full.some((s) => s.verdict === "object") ? "object" : "allow", ms, servers: full };
};
const ENDED = { stopReason: "end_turn", finalText: "" };
const texts = (blocks: PromptBlock[]) => blocks.map((b) => (b.type === "text" ? b.text : `<${b.type}>`));

/** Runs the gates with `answers` given in turn (the last one repeated); records what the turn saw. */
async function run(answers: Array<HookFanout | ((servers?: string[]) => HookFanout)>, o: Partial<StopGateOptions> = {}) {
  const { logger, lines } = captureLogger("info");
  const prompts: string[][] = [];
  const asked: Array<string[] | undefined> = [];
  const down: Array<Array<{ name: string; reason: string; verdict: string }>> = [];
  const waiting: string[][] = [];
  let reprompts = 0;
  const outcome = await enforceStopGates(ENDED, {
    stopModes: {},
    maxRejections: 2,
    waitPollMs: 1,
    waitMaxMs: 5_000,
    logger,
    signal: new AbortController().signal,
    agent: { prompt: async (b) => (prompts.push(texts(b)), ENDED) },
    hooks: {
      runHook: async (name, opts) => {
        assert.equal(name, "_Stop");
        asked.push(opts?.servers);
        const a = answers[Math.min(asked.length - 1, answers.length - 1)]!;
        return typeof a === "function" ? a(opts?.servers) : a;
      },
    },
    onGateDown: (g) => down.push(g),
    onWaiting: (g) => waiting.push(g),
    onReprompt: () => reprompts++,
    ...o,
  });
  const rounds = lines.filter((l) => l.evt === "gate.round");
  const downLines = lines.filter((l) => l.evt === "gate.down");
  return { outcome, prompts, asked, down, waiting, reprompts, rounds, downLines };
}

describe("the re-prompt", () => {
  test("names the objecting gate, the merged _Stop's time, and the trimmed text; the prefix comes first; onReprompt once per re-prompt", async () => {
    const r = await run([fan([{ name: "lint", verdict: "object", text: "  run the linter \n" }], 42), fan([{ name: "lint" }])], {
      prefix: () => [{ type: "text", text: "after compaction: re-read the plan" }],
    });
    assert.equal(r.outcome.kind, "allowed");
    assert.equal(r.outcome.rounds, 1);
    assert.equal(r.reprompts, 1);
    assert.deepEqual(r.prompts, [
      [
        "after compaction: re-read the plan",
        "Stop gate objection: your turn cannot end yet. The following gate server objected to ending the turn (merged _Stop, 42 ms). Address the objection, then finish.\n\n[lint] run the linter",
      ],
    ]);
    assert.deepEqual(r.asked, [undefined, undefined], "re-prompted rounds ask every gate");
  });

  test("a gate absent from stop modes is a reprompt gate; a budget of 0 ends at once with its name", async () => {
    const r = await run([fan([{ name: "unlisted", verdict: "object", text: "no" }])], { maxRejections: 0 });
    assert.equal(r.outcome.kind, "budget-exhausted");
    assert.deepEqual(r.outcome.kind === "budget-exhausted" && r.outcome.objectors, ["unlisted"]);
    assert.equal(r.outcome.rounds, 0);
    assert.deepEqual(r.prompts, []);
    assert.equal(r.reprompts, 0);
  });

  test("a re-prompted turn that ends otherwise than end_turn is not gated again", async () => {
    const r = await run([fan([{ name: "lint", verdict: "object", text: "again" }])], {
      maxRejections: 3,
      agent: { prompt: async () => ({ stopReason: "max_tokens", finalText: "cut" }) },
    });
    assert.equal(r.outcome.kind, "allowed");
    assert.equal(r.outcome.result.finalText, "cut", "the re-prompted turn's result is the turn's");
    assert.equal(r.asked.length, 1);
  });
});

describe("wait gates that are not running", () => {
  test("absent from the fan-out with on_error object: an objection that waits; reported once (gate.down, onGateDown), then its approval ends the wait", async () => {
    const r = await run([fan([]), fan([]), fan([{ name: "approve" }])], {
      stopModes: { approve: "wait" },
      waitGates: [{ name: "approve", onError: "object" }],
    });
    assert.equal(r.outcome.kind, "allowed");
    assert.deepEqual(r.prompts, [], "no model turn for a wait gate");
    assert.deepEqual(r.waiting, [["approve"]]);
    assert.deepEqual(r.down, [[{ name: "approve", reason: "not running: the session's MCP proxy did not report it", verdict: "object" }]]);
    assert.equal(r.downLines.length, 1, "one gate.down per gate and turn");
    assert.equal(r.downLines[0]!.level, "warn");
    assert.equal(r.downLines[0]!.gate, "approve");
    assert.equal(r.downLines[0]!.verdict, "object");
    assert.match(r.downLines[0]!.msg, /counts as an objection \(on_error: object\) and the turn waits/);
    assert.deepEqual(r.asked, [undefined, ["approve"], ["approve"]]);
    assert.deepEqual(
      r.rounds[0]!.servers,
      [
        {
          name: "approve",
          verdict: "object",
          ms: 0,
          timed_out: false,
          error: "not running: the session's MCP proxy did not report it",
          down: true,
        },
      ],
      "the round names it as down",
    );
  });

  test("absent with on_error allow: no objection, reported once as such", async () => {
    const r = await run([fan([])], {
      stopModes: { approve: "wait" },
      waitGates: waitGatesOf([{ name: "approve", stop: "wait", on_error: "allow" }]),
    });
    assert.equal(r.outcome.kind, "allowed");
    assert.deepEqual(r.down, [[{ name: "approve", reason: "not running: the session's MCP proxy did not report it", verdict: "allow" }]]);
    assert.match(r.downLines[0]!.msg, /counts as no objection \(on_error: allow\)/);
    assert.deepEqual(r.waiting, []);
  });

  test("one absent while other servers answered is still absent; one reported down without a reason is 'not running'", async () => {
    const r = await run([fan([{ name: "lint" }, { name: "audit", down: true, verdict: "allow" }])], {
      waitGates: [
        { name: "approve", onError: "allow" },
        { name: "audit", onError: "allow" },
      ],
    });
    assert.equal(r.outcome.kind, "allowed");
    assert.deepEqual(r.down, [
      [
        { name: "audit", reason: "not running", verdict: "allow" },
        { name: "approve", reason: "not running: the session's MCP proxy did not report it", verdict: "allow" },
      ],
    ]);
  });

  test("one the proxy reports as down is reported with the proxy's reason, once across the polls", async () => {
    const isDown = { name: "approve", verdict: "object" as const, down: true, error: "exited with 1", text: "_Stop could not be checked" };
    const r = await run([fan([isDown]), fan([isDown]), fan([isDown]), fan([{ name: "approve" }])], { stopModes: { approve: "wait" } });
    assert.equal(r.outcome.kind, "allowed");
    assert.deepEqual(r.down, [[{ name: "approve", reason: "exited with 1", verdict: "object" }]]);
    assert.equal(r.downLines.length, 1);
  });

  test("only the gates named in the wait are added as absent while polling", async () => {
    const r = await run(
      [
        fan([{ name: "approve", verdict: "object", text: "wait" }, { name: "other" }]),
        (servers) => fan((servers ?? []).map((name) => ({ name }))),
      ],
      {
        stopModes: { approve: "wait", other: "wait" },
        waitGates: waitGatesOf([
          { name: "approve", stop: "wait", on_error: "object" },
          { name: "other", stop: "wait", on_error: "object" },
          { name: "lint", stop: "reprompt", on_error: "allow" },
        ]),
      },
    );
    assert.equal(r.outcome.kind, "allowed");
    assert.deepEqual(r.down, [], "the gate that answered is not down; the one not asked is not absent");
    assert.deepEqual(r.asked, [undefined, ["approve"]]);
  });
});

describe("a wait", () => {
  test('two gates waited on: each leaves once it answers "" itself; a timed-out or failed allow does not count', async () => {
    const began = Date.now();
    const both = { stopModes: { a: "wait" as const, b: "wait" as const } };
    const r = await run(
      [
        fan([
          { name: "a", verdict: "object", text: "x" },
          { name: "b", verdict: "object", text: "y" },
        ]),
        fan([{ name: "a" }, { name: "b", timed_out: true }]),
        fan([{ name: "b", error: "connection reset" }]),
        fan([{ name: "b" }]),
      ],
      both,
    );
    assert.equal(r.outcome.kind, "allowed");
    assert.deepEqual(r.asked, [undefined, ["a", "b"], ["b"], ["b"]]);
    assert.deepEqual(
      r.rounds.map((l) => [l.round, l.verdict]),
      [
        [1, "object"],
        [2, "object"],
        [3, "object"],
        [4, "allow"],
      ],
    );
    assert.equal(r.rounds[0]!.waited_ms, 0, "the first round is not a wait");
    assert.equal(r.rounds[0]!.msg, "stop gate round");
    for (const l of r.rounds)
      assert.ok(l.waited_ms >= 0 && l.waited_ms <= Date.now() - began, `waited_ms ${l.waited_ms} is the time since the wait began`);
    assert.equal(r.outcome.rounds, 0, "no model turn spent");
  });

  test("past wait_max it ends as wait-timeout naming the gates still pending", async () => {
    const r = await run([fan([{ name: "approve", verdict: "object", text: "wait" }, { name: "lint" }])], {
      stopModes: { approve: "wait" },
      waitPollMs: 5,
      waitMaxMs: 30,
    });
    assert.equal(r.outcome.kind, "wait-timeout");
    assert.deepEqual(r.outcome.kind === "wait-timeout" && r.outcome.objectors, ["approve"]);
    assert.ok(r.asked.length >= 2, "it polled before giving up");
  });

  test("a cancel while waiting ends it as cancelled, without another poll", async () => {
    const ac = new AbortController();
    const r = await run(
      [
        () => {
          setTimeout(() => ac.abort(), 20);
          return fan([{ name: "approve", verdict: "object", text: "wait" }]);
        },
      ],
      { stopModes: { approve: "wait" }, signal: ac.signal, waitPollMs: 60_000, waitMaxMs: 120_000 },
    );
    assert.equal(r.outcome.kind, "cancelled");
    assert.equal(r.asked.length, 1);
  });

  test("a turn cancelled before its gates were asked is cancelled, not allowed", async () => {
    const ac = new AbortController();
    ac.abort();
    const r = await run([fan([])], { signal: ac.signal });
    assert.equal(r.outcome.kind, "cancelled");
    assert.deepEqual(r.asked, []);
  });

  test(`a poll that reaches a pending gate starts the unreachable count over; ${UNREACHABLE_POLLS} in a row end the wait, logged as an objecting round`, async () => {
    const began = Date.now();
    const objecting = fan([{ name: "approve", verdict: "object", text: "wait" }]);
    const none = fan([]);
    const answers = [objecting, none, none, objecting, ...Array(UNREACHABLE_POLLS).fill(none)];
    const r = await run(answers, { stopModes: { approve: "wait" }, waitGates: [{ name: "approve", onError: "object" }] });
    assert.equal(r.outcome.kind, "unreachable");
    assert.deepEqual(r.outcome.kind === "unreachable" && r.outcome.objectors, ["approve"]);
    assert.equal(r.asked.length, 4 + UNREACHABLE_POLLS, "two unreachable polls were forgiven by the one that reached it");
    assert.equal(r.rounds.at(-1)!.verdict, "object");
    assert.equal(r.rounds.at(-1)!.round, 4 + UNREACHABLE_POLLS);
    assert.ok(r.rounds.at(-1)!.waited_ms <= Date.now() - began, "waited_ms is the time since the wait began");
  });
});
