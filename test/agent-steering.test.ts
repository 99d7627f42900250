// Native steering over real ACP stdio with the demo agent: how `_session/steering` is
// detected, what a steer into a running prompt does, and what a steer racing the end of
// the turn is answered when the bridge opts into idleBehavior "promptRequired".
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readSteerAnswer, steerRequest, STEER_METHOD } from "../src/agent/steering.js";
import { eventBlock, poolFixture } from "./fixtures/agent-helpers.js";
import { waitFor } from "../kit/wait.js";

const { pool, acquire, ask } = poolFixture();

describe("native steering (_session/steering)", () => {
  it("an agent that does not advertise steering is not steered; asked anyway, its answer reads as refused (fall back to cancel-and-merge)", async () => {
    const p = pool();
    const s = await acquire(p, "plain");
    assert.equal(s.steerable, false);
    const answer = await s.proc.agent.request(STEER_METHOD, steerRequest(s.sessionId, ask("hello"))).then(
      (value) => readSteerAnswer({ ok: true, value }),
      (error: unknown) => readSteerAnswer({ ok: false, error }),
    );
    assert.equal(answer.kind, "refused");
  });

  it("a steer into a running prompt is injected: the turn finishes its request with the steered message in it, without a cancel", async () => {
    const p = pool({ env: { DEMO_AGENT_STEERING: "1" } });
    const s = await acquire(p, "steerable");
    assert.equal(s.steerable, true, "advertised by _meta.steering.supported at initialize");
    // #progress: a tool call the agent reports before its #slow wait, so the turn is surely
    // running on the agent's side when the steer goes out.
    let updates = 0;
    const turn = s.prompt(ask("#progress #slow 1500 #final-only build it"), { onUpdate: () => void updates++ });
    await waitFor(() => updates > 0, { what: "the agent's first update of the #slow turn" });
    const answer = await s.steer([eventBlock("ivy", "use the staging branch")]);
    assert.deepEqual(answer, { kind: "injected" });
    const r = await turn;
    assert.equal(r.stopReason, "end_turn");
    assert.match(r.finalText, /Asked: #progress #slow 1500 #final-only build it/);
    assert.match(r.finalText, /Steered in at \d{4}-\d\d-\d\dT[\d:.]+Z: use the staging branch/);
  });

  it("a steer that races the end of the turn is answered promptRequired (no turn running) and starts no turn", async () => {
    const p = pool({ env: { DEMO_AGENT_STEERING: "1" } });
    const s = await acquire(p, "late");
    await s.prompt(ask("#final-only quick one"));
    const said: string[] = [];
    const onUpdate = (n: { update: { sessionUpdate: string; content?: unknown } }) => {
      const c = n.update.content as { type?: string; text?: string } | undefined;
      said.push(n.update.sessionUpdate === "agent_message_chunk" && c?.type === "text" ? (c.text ?? "") : n.update.sessionUpdate);
    };
    s.proc.routes.set(s.sessionId, {
      onUpdate,
      onPermission: async () => ({ outcome: { outcome: "cancelled" } }),
      onElicitation: async () => ({ action: "cancel" }),
    });
    const value = await s.proc.agent.request(STEER_METHOD, steerRequest(s.sessionId, ask("#final-only too late")));
    assert.deepEqual(readSteerAnswer({ ok: true, value }), { kind: "no-turn", reason: "noRunningTurn" });
    // A later positive: a prompt sent after the steer's answer is answered, and its updates
    // come after any a turn started by the steer would have sent.
    await s.proc.agent.request("session/prompt", { sessionId: s.sessionId, prompt: ask("#final-only afterwards") });
    assert.ok(
      said.some((t) => /Asked: #final-only afterwards/.test(t)),
      `the later prompt was answered: ${JSON.stringify(said)}`,
    );
    assert.deepEqual(
      said.filter((t) => /too late/.test(t)),
      [],
      "the agent did not start a turn nobody owns",
    );
    assert.deepEqual(
      await s.steer(ask("x")),
      { kind: "no-turn", reason: "no turn is running on this session" },
      "the session does not even ask when it runs no turn",
    );
  });
});
