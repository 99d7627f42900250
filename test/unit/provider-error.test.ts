/**
 * Provider failures by class (src/agent/provider-error.ts), from what the agents really
 * report: claude-agent-acp's ACP errors (authRequired's -32000, `errorKind` data, the
 * "API Error: …" text) and codex-acp's stderr lines of the turn; when a limit resets; and
 * what the turn does next (src/turn/provider-failure.ts).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { classifyProviderError, resetOf } from "../../src/agent/provider-error.js";
import { holdNotice, keyVariable, providerStep } from "../../src/turn/provider-failure.js";
import type { Config } from "../../src/config/schema.js";

// The agents' clock times ("Try again at 5:25 PM") are their local time: this file's is UTC.
process.env.TZ = "UTC";

const NOW = Date.UTC(2026, 11, 6, 17, 24, 56);
const codexLine = (text: string) =>
  `\u001b[2m2026-12-06T17:24:56.071456Z\u001b[0m \u001b[31mERROR\u001b[0m \u001b[2mcodex_acp::thread\u001b[0m\u001b[2m:\u001b[0m Unhandled error during turn: ${text}`;
const internal = { code: -32603, message: "Internal error" };

test("Claude: authRequired (-32000) and errorKind authentication_failed are auth", () => {
  assert.equal(classifyProviderError({ code: -32000, message: "Authentication required" }, "")?.class, "auth");
  assert.equal(
    classifyProviderError({ code: -32603, message: "Internal error: Invalid API key", data: { errorKind: "authentication_failed" } }, "")
      ?.class,
    "auth",
  );
});

test("Codex: a 401 in the turn's stderr is auth, with the provider's words as the detail", () => {
  const p = classifyProviderError(
    internal,
    codexLine(
      "unexpected status 401 Unauthorized: Incorrect API key provided: fake-key., url: http://127.0.0.1:1/v1/responses Some(Other)",
    ),
  );
  assert.equal(p?.class, "auth");
  assert.match(p!.detail, /^Unhandled error during turn: unexpected status 401 Unauthorized: Incorrect API key provided/);
});

test("limits: Claude's 429 text has no reset; Codex's usage limit says when, to the minute (the end of that minute taken)", () => {
  const claude = classifyProviderError(
    { code: -32603, message: "Internal error: API Error: Request rejected (429) · This request would exceed your account's rate limit." },
    "",
    NOW,
  );
  assert.deepEqual([claude?.class, claude?.until], ["limit", undefined]);
  const codex = classifyProviderError(
    internal,
    codexLine("You've hit your usage limit. Try again at 5:25 PM. Some(UsageLimitExceeded)"),
    NOW,
  );
  assert.equal(codex?.class, "limit");
  assert.equal(new Date(codex!.until!).toISOString(), "2026-12-06T17:26:00.000Z");
});

test("reset times as providers and agents say them", () => {
  assert.equal(resetOf('{"resets_at": 1796578000}', NOW), 1796578000_000);
  assert.equal(resetOf('"resets_in_seconds": 90', NOW), NOW + 90_000);
  assert.equal(resetOf("retry-after: 30", NOW), NOW + 30_000);
  assert.equal(resetOf("Rate limited. Please try again in 2m", NOW), NOW + 120_000);
  assert.equal(resetOf("limit resets at 2026-12-06T18:40:00Z", NOW), Date.UTC(2026, 11, 6, 18, 40));
  assert.equal(new Date(resetOf("5-hour limit reached ∙ resets 6:40pm", NOW)!).toISOString(), "2026-12-06T18:41:00.000Z");
  // A time already past today is tomorrow's.
  assert.equal(new Date(resetOf("resets 9am", NOW)!).toISOString(), "2026-12-07T09:01:00.000Z");
  assert.equal(resetOf("nothing said", NOW), undefined);
});

test("overloaded and network failures, and anything else", () => {
  assert.equal(classifyProviderError({ code: -32603, message: "Internal error: API Error: 529 Overloaded" }, "")?.class, "overloaded");
  assert.equal(classifyProviderError(internal, codexLine("unexpected status 503 Service Unavailable"))?.class, "overloaded");
  assert.equal(
    classifyProviderError({ code: -32603, message: "Internal error", data: { errorKind: "server_error" } }, "")?.class,
    "overloaded",
  );
  assert.equal(classifyProviderError({ code: -32603, message: "API Error: Connection error." }, "")?.class, "network");
  assert.equal(
    classifyProviderError(internal, codexLine("error sending request for url (http://127.0.0.1:9/v1/responses)"))?.class,
    "network",
  );
  assert.equal(classifyProviderError({ code: -32602, message: "Invalid params" }, "")?.class, "other");
});

test("what follows: auth is final, naming the provider, the key's variable and doctor; a limit holds; the rest is retried", () => {
  const cfg = {
    agent: { preset: "claude", provider: { base_url: "http://127.0.0.1:8080", model: "claude-sonnet-4-5" }, env: {} },
    queue: { retry_max: 300_000 },
  } as unknown as Config;
  const auth = providerStep({ class: "auth", detail: "invalid x-api-key" }, cfg);
  assert.equal(auth.kind, "final");
  assert.match(
    (auth as { reason: string }).reason,
    /the model provider \(http:\/\/127\.0\.0\.1:8080\) refused the agent's key in ANTHROPIC_API_KEY \(invalid x-api-key\)\. Run `buzz-bridge doctor`/,
  );
  assert.deepEqual(providerStep({ class: "limit", until: NOW + 1000, detail: "" }, cfg, NOW), {
    kind: "hold",
    until: NOW + 1000,
    guessed: false,
  });
  assert.deepEqual(providerStep({ class: "limit", detail: "" }, cfg, NOW), { kind: "hold", until: NOW + 300_000, guessed: true });
  assert.deepEqual(providerStep({ class: "overloaded", detail: "" }, cfg), { kind: "retry" });
  assert.equal(keyVariable(cfg, { CLAUDE_CODE_OAUTH_TOKEN: "x" }), "CLAUDE_CODE_OAUTH_TOKEN");
  assert.equal(holdNotice(Date.UTC(2026, 11, 6, 18, 40), false, NOW), "The provider's limit resets at 18:40 UTC; I'll answer then.");
  // A reset after midnight (UTC) names its day: "00:10 UTC" alone would read as today's, already past.
  assert.equal(
    holdNotice(Date.UTC(2026, 11, 7, 0, 10), true, NOW),
    "The provider's limit is reached and it gave no reset time; I'll try again at 00:10 UTC on 2026-12-07.",
  );
});
