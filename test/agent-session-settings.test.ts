/**
 * Session settings the Rust bridge's users rely on, end to end through the daemon, the
 * demo agent and the dev relay: `agent.model` / `agent.effort` selected through the
 * agent's session config options, a session title, `agent.initial_message` as a brand-new
 * session's first prompt, rotation after `agent.max_turns_per_session` turns and after
 * the stop reason `max_tokens`, and per-turn usage in Prometheus, the turn's log line and
 * `!status`. The demo agent reports its session (`#session`) in its reply, so each
 * assertion reads what a person in the channel sees.
 */
import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import { World, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";

const INITIAL = "Read NOTES.md before you start. #final-only";

/** The demo agent's `#session` report line, parsed. */
function sessionReport(reply: Event): { id: string; prompts: number; first: string; model: string; effort: string; title: string | null } {
  const m = /session: (\S+); prompts: (\d+); first prompt: (".*?"); model: (\S+); effort: (\S+); title: (null|".*?")$/m.exec(reply.content);
  assert.ok(m, `the reply carries the session report: ${reply.content}`);
  return {
    id: m[1]!,
    prompts: Number(m[2]),
    first: JSON.parse(m[3]!) as string,
    model: m[4]!,
    effort: m[5]!,
    title: JSON.parse(m[6]!) as string | null,
  };
}

/** The value of one Prometheus sample, matching every given label. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return undefined;
}

describe("model, effort, title, initial message, rotation and usage", () => {
  let w: World;
  let d: DaemonProc;
  let base: string;

  before(async () => {
    w = await World.create();
    d = await w.startDaemon({
      agent: { model: "demo-large", effort: "high", max_turns_per_session: 2, initial_message: INITIAL },
      http: { listen: "127.0.0.1:0" },
    });
    base = String((await d.waitLog((l) => l.evt === "daemon.started")).http);
  });
  after(() => w.close());

  test("a brand-new session gets the model, effort and title, and the initial message as its first prompt; only the mention is answered", async () => {
    const ev = await w.owner.post("@agent #session");
    const reply = await w.waitReply(ev);
    const s = sessionReport(reply);
    assert.equal(s.model, "demo-large", "agent.model selected through the agent's model config option");
    assert.equal(s.effort, "high", "agent.effort selected through the agent's thought_level config option");
    assert.equal(s.title, `#build-room · thread ${ev.id.slice(0, 8)}`, "the session is titled after its channel and thread");
    assert.equal(s.prompts, 2, "the initial message and the mention: two prompts");
    assert.equal(s.first, INITIAL, "the initial message was the session's first prompt");
    await d.waitLog((l) => l.evt === "turn.end" && l.status === "answered");
    const replies = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] });
    assert.equal(replies.length, 1, "the agent's answer to the initial message is not posted");
  });

  test("after max_turns_per_session turns the thread's next mention runs in a new session, which gets the initial message again", async () => {
    const root = await w.owner.post("@agent #session (turn 1)");
    const first = sessionReport(await w.waitReply(root));
    const second = await w.owner.post("@agent #session (turn 2)", { replyTo: root });
    const s2 = sessionReport(await w.waitReply(second));
    assert.equal(s2.id, first.id, "the second turn reuses the session");
    assert.equal(s2.prompts, 3, "no second initial message in a running session");
    const rotated = await d.waitLog(
      (l) => l.evt === "agent.rotate" && l.reason === "max_turns" && String(l.scope).endsWith(root.id),
      20_000,
    );
    assert.equal(rotated.turns, 3, "the session had run the initial message and two mentions");
    const third = await w.owner.post("@agent #session (turn 3)", { replyTo: root });
    const s3 = sessionReport(await w.waitReply(third));
    assert.notEqual(s3.id, first.id, "a new session after two turns");
    assert.equal(s3.prompts, 2, "the new session starts with the initial message");
    assert.equal(s3.model, "demo-large", "the model is applied to the new session too");
  });

  for (const reason of ["max_tokens", "max_turn_requests"]) {
    test(`a turn that ends with ${reason} rotates the session at once`, async () => {
      const root = await w.owner.post(`@agent #${reason.replace(/_/g, "-")} #session`);
      const first = sessionReport(await w.waitReply(root));
      await d.waitLog((l) => l.evt === "agent.rotate" && l.reason === reason && String(l.scope).endsWith(root.id), 20_000);
      const next = await w.owner.post(`@agent #session (after ${reason})`, { replyTo: root });
      const s = sessionReport(await w.waitReply(next));
      assert.notEqual(s.id, first.id, `the mention after ${reason} runs in a fresh session`);
    });
  }

  test("usage the agent reports is counted per channel and model: Prometheus, the turn's log line, the status page and !status", async () => {
    const root = await w.owner.post("@agent #usage 1200 340 0.25");
    await w.waitReply(root);
    const next = await w.owner.post("@agent #usage 800 60 0.5", { replyTo: root });
    await w.waitReply(next);
    const ends = await d.waitLog(
      (l) => l.evt === "turn.end" && (l.usage as { inputTokens?: number } | undefined)?.inputTokens === 800,
      20_000,
    );
    assert.deepEqual(
      ends.usage,
      { inputTokens: 800, outputTokens: 60, cost: { amount: 0.5, currency: "USD" } },
      "the second turn's cost is the session total's increase (0.75 - 0.25), not the running total",
    );
    assert.equal(ends.model, "demo-large");

    const metrics = await (await fetch(`${base}/metrics`)).text();
    const labels = { channel: w.channel, model: "demo-large" };
    assert.equal(sample(metrics, "buzz_bridge_tokens_total", { ...labels, direction: "in" }), 2000);
    assert.equal(sample(metrics, "buzz_bridge_tokens_total", { ...labels, direction: "out" }), 400);
    assert.equal(sample(metrics, "buzz_bridge_cost_total", { ...labels, currency: "USD" }), 0.75);
    assert.ok(
      (sample(metrics, "buzz_bridge_session_rotations_total", { reason: "max_turns" }) ?? 0) >= 1,
      "rotations are counted by reason",
    );

    // The cells without their phone-width labels (shown only on narrow screens).
    const page = (await (await fetch(`${base}/status`)).text()).replace(/<span class="label">[^<]*<\/span>/g, "");
    assert.match(page, /<td>demo-large<\/td><td>2<\/td><td>2000<\/td><td>400<\/td><td>0\.7500 USD<\/td>/, "the status page's usage today");

    const cmd = await w.owner.post("!status");
    const [outcome] = await w.waitEvents({ kinds: [KIND.system], authors: [w.agent.pk], "#e": [cmd.id] }, (e) => e.length > 0);
    const payload = JSON.parse(outcome!.content) as { text: string };
    assert.match(payload.text, /today: 2000 tokens in, 400 out, 0\.75 USD over 2 turns/);
  });
});

describe("a value the agent does not offer", () => {
  let w: World;
  before(async () => {
    w = await World.create();
  });
  after(() => w.close());

  const cases = [
    {
      key: "model",
      agent: { model: "gpt-9000" },
      notice: /agent\.model 'gpt-9000' is not offered by the agent \(it offers: demo-small, demo-large\)/,
    },
    { key: "effort", agent: { effort: "max" }, notice: /agent\.effort 'max' is not offered by the agent \(it offers: low, medium, high\)/ },
  ];
  for (const c of cases) {
    test(`agent.${c.key}: the turn fails with a notice naming what the agent offers`, async () => {
      const d = await w.startDaemon({ agent: c.agent, queue: { max_attempts: 1 } });
      const ev = await w.owner.post(`@agent hello (${c.key})`);
      const notice = await w.waitReply(ev, 30_000);
      assert.match(notice.content, c.notice);
      assert.equal(await d.stop(), 0);
    });
  }
});
