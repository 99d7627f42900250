/**
 * Model and usage with a real Claude agent that reports them over ACP:
 * `@agentclientprotocol/claude-agent-acp` (a devDependency) against the scripted fake
 * Anthropic API on 127.0.0.1. No network, no API key.
 *
 * What a person sees: `agent.model` picks the model the API is asked for (through the
 * agent's `model` session config option); the tokens the API reported for each turn
 * reach Prometheus, the turn's log line and `!status`, per channel and model; the cost
 * Claude computes is counted per turn, not as its running session total.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { World, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { startFakeLlm, type FakeLlm } from "./fixtures/fake-llm.js";
import { claudeAgentAcpBin, offlineClaudeEnv } from "./fixtures/claude-code.js";
import { waitFor } from "../kit/wait.js";
import { imeta, PNG, upload } from "./fixtures/media.js";

const TOKENS = { input_tokens: 1234, output_tokens: 56 };

/** The value of one Prometheus sample, matching every given label. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return undefined;
}

let w: World;
let d: DaemonProc;
let api: FakeLlm;
let base: string;

before(async () => {
  api = await startFakeLlm({ mode: "text", finalText: "Short answer from the model.", usage: TOKENS });
  w = await World.create({ channelName: "build-room" });
  const home = join(w.dir, "claude-home");
  mkdirSync(home, { recursive: true });
  d = await w.startDaemon({
    agent: {
      command: claudeAgentAcpBin(),
      args: [],
      env: { ...offlineClaudeEnv(api.url), HOME: home },
      model: "haiku",
      idle_timeout: "60s",
    },
    http: { listen: "127.0.0.1:0" },
  });
  base = String((await d.waitLog((l) => l.evt === "daemon.started")).http);
});
after(async () => {
  await w?.close();
  await api?.close();
});

test("agent.model is selected through claude-agent-acp's model config option; the API's token usage is counted per turn, channel and model", async () => {
  const first = await w.owner.post("@agent first question");
  await w.waitReply(first, 90_000);
  const second = await w.owner.post("@agent second question", { replyTo: first });
  await w.waitReply(second, 90_000);
  const ends = () => d.logs.filter((l) => l.evt === "turn.end" && l.status === "answered");
  await waitFor(() => ends().length >= 2, { timeoutMs: 20_000, intervalMs: 100, what: "two answered turns logged" });

  const models = [...new Set(api.turnRequests().map((r) => r.model))];
  assert.equal(models.length, 1, `one model for every turn: ${models.join(", ")}`);
  assert.match(models[0]!, /haiku/, "the configured model, not Claude's default");

  const usages = ends().map((l) => l.usage as { inputTokens: number; outputTokens: number; cost?: { amount: number; currency: string } });
  for (const u of usages) {
    assert.equal(u.inputTokens, TOKENS.input_tokens, "the turn's input tokens are the API's");
    assert.equal(u.outputTokens, TOKENS.output_tokens, "the turn's output tokens are the API's");
    assert.equal(u.cost?.currency, "USD");
    assert.ok(u.cost!.amount > 0, "Claude priced the turn");
  }
  assert.ok(
    Math.abs(usages[1]!.cost!.amount - usages[0]!.cost!.amount) < 1e-9,
    "the same tokens cost the same in both turns: the second is not the session's running total",
  );
  assert.equal(ends()[0]!.model, "haiku", "the turn's log line names the model");

  const metrics = await (await fetch(`${base}/metrics`)).text();
  const labels = { channel: w.channel, model: "haiku" };
  assert.equal(sample(metrics, "buzz_bridge_tokens_total", { ...labels, direction: "in" }), 2 * TOKENS.input_tokens);
  assert.equal(sample(metrics, "buzz_bridge_tokens_total", { ...labels, direction: "out" }), 2 * TOKENS.output_tokens);
  const cost = sample(metrics, "buzz_bridge_cost_total", { ...labels, currency: "USD" })!;
  assert.ok(Math.abs(cost - 2 * usages[0]!.cost!.amount) < 1e-9, `cost_total is the sum of the turns' costs (${cost})`);

  const cmd = await w.owner.post("!status");
  const [outcome] = await w.waitEvents({ kinds: [KIND.system], authors: [w.agent.pk], "#e": [cmd.id] }, (e) => e.length > 0);
  assert.match(
    (JSON.parse(outcome!.content) as { text: string }).text,
    new RegExp(`today: ${2 * TOKENS.input_tokens} tokens in, ${2 * TOKENS.output_tokens} out, [0-9.]+ USD over 2 turns`),
  );
});

test("an image attached to a mention reaches Claude: its request to the model carries the image block", async () => {
  const png = await upload(w.relay.httpUrl, w.owner.sk, PNG, "image/png");
  const ev = await w.owner.post("@agent what is in this picture?", {
    tags: [imeta({ url: png.url, mime: "image/png", x: png.sha256, size: PNG.length, name: "pixel.png" })],
  });
  await w.waitReplies(ev, 1, 90_000);
  type Part = { type: string; source?: { type?: string; media_type?: string; data?: string } };
  const parts = (api.requests as unknown as { body: { messages?: { content: unknown }[] } }[]).flatMap((r) =>
    (r.body.messages ?? []).flatMap((m) => (Array.isArray(m.content) ? (m.content as Part[]) : [])),
  );
  assert.ok(
    parts.some((p) => p.type === "image" && p.source?.media_type === "image/png" && p.source.data === PNG.toString("base64")),
    `an image block with the attached PNG in a request to the model; part types seen: ${[...new Set(parts.map((p) => p.type))].join(", ")}`,
  );
});
