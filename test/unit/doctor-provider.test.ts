/**
 * `doctor`'s provider line (src/app/doctor/doctor-provider.ts) against the scripted model's
 * real answers (../fixtures/fake-llm.ts) and the bad providers an operator meets: ✓ with the
 * model (from the models list, or a one-token request where a gateway has none), and ✗
 * naming the variable and the cause — key refused, model unknown, nothing listening, an HTML
 * page, a hang, a 200 with an error body, TLS to a plain port, a key variable set but empty.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { providerCheck } from "../../src/app/doctor/doctor-provider.js";
import { presetFor } from "../../src/presets/index.js";
import type { Config } from "../../src/config/schema.js";
import { startFakeLlm, providerFailure } from "../fixtures/fake-llm.js";

const claude = presetFor("claude")!;
const codex = presetFor("codex")!;
const agent = (base_url: string, model = "claude-sonnet-4-5") => ({ provider: { base_url, model } }) as unknown as Config["agent"];
const KEY = { ANTHROPIC_API_KEY: "sk-test" };

const servers: Server[] = [];
after(() => {
  for (const s of servers) s.closeAllConnections(), s.close();
});
async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const s = createServer(handler);
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

test("✓ with the model: from a models list, or a one-token request where the gateway has none; the key as the agent sends it", async () => {
  const listed = await startFakeLlm({ models: ["claude-sonnet-4-5", "claude-haiku-4-5"] });
  const r1 = await providerCheck(agent(listed.url), claude, KEY, 5000);
  assert.deepEqual([r1.mark, r1.summary], ["ok", `${listed.url} (key ANTHROPIC_API_KEY) lists the model 'claude-sonnet-4-5'`]);
  await listed.close();
  const bare = await startFakeLlm();
  const r2 = await providerCheck(agent(bare.url), claude, KEY, 5000);
  assert.deepEqual([r2.mark, r2.summary], ["ok", `${bare.url} (key ANTHROPIC_API_KEY) answered with the model 'claude-sonnet-4-5'`]);
  const [req] = bare.requests;
  assert.equal(req?.model, "claude-sonnet-4-5", "asked with the configured model");
  assert.equal(req?.headers["x-api-key"], "sk-test", "with the agent's key");
  assert.equal(req?.path, "/v1/messages", "where Claude sends it");
  await bare.close();
});

test("✗ key refused (Anthropic and OpenAI), naming the variable", async () => {
  const a = await startFakeLlm({ fail: providerFailure("anthropic", "auth") });
  const r = await providerCheck(agent(a.url), claude, KEY, 5000);
  assert.equal(r.mark, "fail");
  assert.equal(r.summary, `${a.url} (key ANTHROPIC_API_KEY) refused the key: 401 invalid x-api-key; check ANTHROPIC_API_KEY`);
  await a.close();
  const o = await startFakeLlm({ fail: providerFailure("openai-responses", "auth") });
  const rc = await providerCheck(agent(`${o.url}/v1`, "gpt-5"), codex, { OPENAI_API_KEY: "sk-o" }, 5000);
  assert.match(rc.summary, /refused the key: 401 Incorrect API key provided: fake-key\.; check OPENAI_API_KEY$/);
  await o.close();
});

test("✗ model unknown: not in the list, with what is offered", async () => {
  const api = await startFakeLlm({ models: ["claude-haiku-4-5"] });
  const r = await providerCheck(agent(api.url, "claude-opus-9"), claude, KEY, 5000);
  assert.equal(r.summary, `${api.url} (key ANTHROPIC_API_KEY) does not offer the model 'claude-opus-9' (agent.provider.model)`);
  assert.deepEqual(r.details, ["offered: claude-haiku-4-5"]);
  await api.close();
});

test("✗ nothing listening, an HTML page, a hang, a 200 with an error body, TLS to a plain port", async () => {
  const closed = await serve(() => undefined);
  servers.pop()!.close();
  assert.match((await providerCheck(agent(closed), claude, KEY, 5000)).summary, /nothing listening there \(connection refused\)$/);

  const html = await serve((_q, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end("<!doctype html><title>Sign in</title>");
  });
  assert.match((await providerCheck(agent(html), claude, KEY, 5000)).summary, /answered an HTML page \(200\), not the model API/);

  const hang = await serve(() => undefined);
  assert.match((await providerCheck(agent(hang), claude, KEY, 300)).summary, /no answer within 0 s \(it hangs\)$/);

  const errorBody = await serve((_q, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: "upstream quota exhausted" } }));
  });
  assert.match((await providerCheck(agent(errorBody), claude, KEY, 5000)).summary, /answered 200 with an error: upstream quota exhausted$/);

  const plain = await serve((_q, res) => res.end("{}"));
  assert.match((await providerCheck(agent(plain.replace("http:", "https:")), claude, KEY, 5000)).summary, /TLS failed/);
});

test("✗ a key variable set but empty; no key at all", async () => {
  const r = await providerCheck(agent("http://127.0.0.1:1"), claude, { ANTHROPIC_API_KEY: " " }, 5000);
  assert.equal(r.summary, "ANTHROPIC_API_KEY is set but empty: the agent would send no key to http://127.0.0.1:1; give it the key's value");
  const none = await providerCheck(agent("http://127.0.0.1:1"), claude, {}, 5000);
  assert.match(none.summary, /none of ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN, ANTHROPIC_AUTH_TOKEN is set/);
});

test("gemini: ✓ from Gemini's models list or a one-token generateContent, with the key in x-goog-api-key; ✗ naming the variable when Gemini answers 400 API_KEY_INVALID", async () => {
  const gemini = presetFor("gemini")!;
  const gkey = { GEMINI_API_KEY: "AIza-test" };
  const listed = await startFakeLlm({ models: ["gemini-2.5-pro", "gemini-2.5-flash"] });
  const r1 = await providerCheck(agent(listed.url, "gemini-2.5-flash"), gemini, gkey, 5000);
  assert.deepEqual([r1.mark, r1.summary], ["ok", `${listed.url} (key GEMINI_API_KEY) lists the model 'gemini-2.5-flash'`]);
  const unknown = await providerCheck(agent(listed.url, "gemini-9"), gemini, gkey, 5000);
  assert.deepEqual(unknown.details, ["offered: gemini-2.5-pro, gemini-2.5-flash"]);
  await listed.close();

  const bare = await startFakeLlm();
  const r2 = await providerCheck(agent(bare.url, "gemini-gateway-model"), gemini, gkey, 5000);
  assert.deepEqual([r2.mark, r2.summary], ["ok", `${bare.url} (key GEMINI_API_KEY) answered with the model 'gemini-gateway-model'`]);
  const [req] = bare.requests;
  assert.equal(req?.path, "/v1beta/models/gemini-gateway-model:generateContent", "where Gemini CLI sends it");
  assert.equal(req?.headers["x-goog-api-key"], "AIza-test", "with the agent's key, as Gemini CLI sends it");
  await bare.close();

  const refused = await startFakeLlm({ fail: providerFailure("gemini", "auth") });
  const r3 = await providerCheck(agent(refused.url, "gemini-2.5-flash"), gemini, gkey, 5000);
  assert.equal(r3.mark, "fail");
  assert.equal(
    r3.summary,
    `${refused.url} (key GEMINI_API_KEY) refused the key: 400 API key not valid. Please pass a valid API key.; check GEMINI_API_KEY`,
  );
  await refused.close();
});
