/**
 * The small pieces behind model/effort selection, usage counting, session titles and the
 * status page, without processes: what the agent offers read from a session/new answer
 * (config options with groups, or the older model selector), per-turn cost from the
 * agent's running total, the day's tally rolling over at midnight UTC, titles cleaned and
 * bounded, and every relay-sourced value escaped on the page.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { offeredSettings, SessionUsage } from "../../src/agent/index.js";
import { sessionTitle } from "../../src/turn/sessions.js";
import { UsageToday } from "../../src/app/daemon/usage-today.js";
import { renderStatusPage, statusJson, type StatusSnapshot } from "../../src/app/http/status-page.js";

test("offered settings come from config options (grouped values too), else from the older model selector", () => {
  const viaOptions = offeredSettings({
    modes: {
      currentModeId: "a",
      availableModes: [
        { id: "a", name: "A" },
        { id: "b", name: "B" },
      ],
    },
    configOptions: [
      {
        id: "m",
        name: "Model",
        category: "model",
        type: "select",
        currentValue: "x",
        options: [
          { group: "fast", name: "Fast", options: [{ value: "x", name: "x" }] },
          { group: "big", name: "Big", options: [{ value: "y", name: "y" }] },
        ],
      },
      {
        id: "reasoning_effort",
        name: "Effort",
        type: "select",
        currentValue: "low",
        options: [
          { value: "low", name: "low" },
          { value: "high", name: "high" },
        ],
      },
    ],
    models: { availableModels: [{ modelId: "ignored" }], currentModelId: "ignored" },
  });
  assert.deepEqual(viaOptions, { modes: ["a", "b"], models: ["x", "y"], efforts: ["low", "high"], modelVia: "config_option" });
  const legacy = offeredSettings({
    models: { availableModels: [{ modelId: "default" }, { modelId: "haiku" }], currentModelId: "default" },
  });
  assert.deepEqual(legacy, { modes: [], models: ["default", "haiku"], efforts: [], modelVia: "set_model" });
  assert.equal(offeredSettings({}).modelVia, "none");
});

test("a turn's cost is the increase of the session's running total; tokens are the turn's own", () => {
  const u = new SessionUsage();
  const turn = (input: number, total?: number, currency = "USD") =>
    u.of({
      usage: { inputTokens: input, outputTokens: 1, totalTokens: input + 1 },
      contextUsage: total === undefined ? undefined : { used: 1, size: 10, cost: { amount: total, currency } },
    });
  assert.deepEqual(turn(10, 0.25), { inputTokens: 10, outputTokens: 1, cost: { amount: 0.25, currency: "USD" } });
  assert.deepEqual(turn(20, 0.75), { inputTokens: 20, outputTokens: 1, cost: { amount: 0.5, currency: "USD" } });
  assert.deepEqual(turn(5), { inputTokens: 5, outputTokens: 1 }, "no usage_update in a turn: no cost for it");
  assert.deepEqual(
    turn(5, 3, "credits"),
    { inputTokens: 5, outputTokens: 1, cost: { amount: 3, currency: "credits" } },
    "another unit starts its own total",
  );
  assert.equal(u.of({}), undefined, "an agent that reports nothing is not counted");
});

test("the day's usage starts again at midnight UTC", () => {
  let now = Date.parse("2026-11-30T23:59:00Z");
  const day = new UsageToday(() => now);
  day.add("c1", "m", { inputTokens: 10, outputTokens: 2, cost: { amount: 0.5, currency: "USD" } });
  day.add("c1", "m", { inputTokens: 5, outputTokens: 1 });
  assert.equal(day.summary(), "today: 15 tokens in, 3 out, 0.5 USD over 2 turns");
  now = Date.parse("2026-12-01T00:00:01Z");
  assert.deepEqual(day.snapshot(), { day: "2026-12-01", rows: [] });
  assert.equal(day.summary(), "no usage reported today");
});

test("session titles are the channel and thread, without control characters, at most 80 characters", () => {
  assert.equal(sessionTitle("build-room"), "#build-room");
  assert.equal(sessionTitle("build\u0000-room\u202e", "abcdef0123456789"), "#build-room · thread abcdef01");
  assert.equal(sessionTitle("x".repeat(200)).length, 80);
});

test("the status page escapes every value that came from a relay or an agent", () => {
  const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>"'&`;
  const now = Date.now();
  const snap: StatusSnapshot = {
    generatedAt: now,
    startedAt: now - 5000,
    version: evil,
    configFile: evil,
    agent: { npub: evil, name: evil },
    owner: { npub: evil, name: evil },
    reload: { at: now, outcome: "refused", needsRestart: [evil], errors: [evil] },
    relay: { url: evil, state: evil, auth: evil, info: [[evil, evil]] },
    channels: [{ id: evil, name: evil, about: evil, type: evil, respondTo: evil, onDenied: evil, queued: 1 }],
    turns: [
      {
        turnId: 1,
        channel: evil,
        scope: `${evil}/${evil}`,
        startedAt: now - 1000,
        lastActivityAt: now,
        lastActivity: evil,
        gateWait: { gates: [evil], since: now },
      },
    ],
    recent: [
      {
        turnId: 2,
        endedAt: now,
        seconds: 3,
        channel: evil,
        thread: evil,
        link: evil,
        askedBy: [{ npub: evil, name: evil }],
        status: "failed",
        reason: evil,
        model: evil,
        usage: { inputTokens: 1, outputTokens: 2, cost: { amount: 1, currency: evil } },
      },
    ],
    denials: [{ at: now, channel: evil, author: { npub: evil, name: evil }, reason: evil }],
    agents: [{ pid: 1, scope: evil, spare: false, busy: true, model: evil, turns: 1, rssBytes: 1 << 20 }],
    circuit: evil,
    usage: { day: evil, rows: [{ channel: evil, model: evil, turns: 1, inputTokens: 1, outputTokens: 1, cost: { [evil]: 1 } }] },
  };
  const html = renderStatusPage(snap);
  assert.doesNotMatch(html, /<script|<img/i, "no element from a value");
  assert.doesNotMatch(html, /"'&(?!amp;|lt;|gt;|quot;|#39;)/, "quotes and ampersands escaped");
  assert.ok(html.split("&lt;script&gt;").length > 20, "the values are shown, as text");
  // The JSON twin is JSON: whatever a value holds, it parses back to itself.
  const json = JSON.parse(JSON.stringify(statusJson(snap))) as { agent: { name: string }; recent_turns: Array<{ reason: string }> };
  assert.equal(json.agent.name, evil);
  assert.equal(json.recent_turns[0]!.reason, evil);
});
