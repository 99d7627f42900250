/**
 * `doctor`'s `provider` line (docs/agents.md "Doctor"): one cheap authenticated request to the
 * model provider with exactly the key, base URL and model the agent gets — the models list
 * (Anthropic's, OpenAI's and Gemini's `GET …/models`), or a one-token request where a gateway has no
 * list — and a verdict naming the key's variable and the cause: key refused, nothing
 * listening, model unknown, TLS, an HTML page, a hang, a 200 carrying an error, an empty key.
 */
import type { Config } from "../../config/schema.js";
import type { Preset } from "../../presets/index.js";
import { trimBase } from "../../presets/types.js";
import type { CheckResult } from "./doctor-result.js";
import { httpRequest, type HttpAnswer } from "../../base/http-request.js";

/** A models list (a gateway's with every model it routes runs to megabytes), or a one-token answer: below this. */
const ANSWER_MAX_BYTES = 16 * 1024 * 1024;

/** Where each API lives when no agent.provider names a gateway. */
const VENDOR_BASE: Partial<Record<NonNullable<Preset["wire"]>, string>> = {
  anthropic: "https://api.anthropic.com",
  "openai-responses": "https://api.openai.com/v1",
  "openai-chat": "https://api.openai.com/v1",
  gemini: "https://generativelanguage.googleapis.com",
};

interface Target {
  wire: "anthropic" | "openai" | "gemini";
  base: string;
  keyVar: string;
  key: string;
  model?: string;
}

export async function providerCheck(
  cfg: Config["agent"],
  preset: Preset,
  env: Record<string, string>,
  timeoutMs: number,
): Promise<CheckResult> {
  const name = "provider";
  if (!preset.wire) return { name, mark: "skip", summary: `the ${preset.name} preset's provider is not asked by doctor` };
  const base = cfg.provider?.base_url ?? VENDOR_BASE[preset.wire];
  if (!base) return { name, mark: "skip", summary: "no base URL to ask" };
  // The variable the agent reads its key from: with agent.provider, codex and the OpenAI-style presets read OPENAI_API_KEY.
  const keys = cfg.provider && preset.wire.startsWith("openai") ? ["OPENAI_API_KEY", ...preset.keys] : preset.keys;
  const emptyVar = keys.find((k) => k in env && env[k]!.trim() === "");
  const keyVar = keys.find((k) => (env[k] ?? "").trim() !== "");
  if (!keyVar)
    return {
      name,
      mark: "fail",
      summary: emptyVar
        ? `${emptyVar} is set but empty: the agent would send no key to ${base}; give it the key's value`
        : `no key to ask ${base} with (none of ${keys.join(", ")} is set)`,
    };
  const t: Target = {
    wire: preset.wire === "anthropic" || preset.wire === "gemini" ? preset.wire : "openai",
    base: trimBase(base),
    keyVar,
    key: env[keyVar]!.trim(),
    model: cfg.provider?.model ?? cfg.model,
  };
  try {
    return await ask(t, timeoutMs);
  } catch (err) {
    return { name, mark: "fail", summary: `${t.base} (key ${keyVar}): ${networkCause(err, timeoutMs)}` };
  }
}

function headers(t: Target): Record<string, string> {
  if (t.wire === "openai") return { authorization: `Bearer ${t.key}`, "content-type": "application/json" };
  if (t.wire === "gemini") return { "x-goog-api-key": t.key, "content-type": "application/json" };
  // An OAuth token (CLAUDE_CODE_OAUTH_TOKEN, ANTHROPIC_AUTH_TOKEN) goes as a bearer token, a key as x-api-key.
  const auth: Record<string, string> = t.keyVar === "ANTHROPIC_API_KEY" ? { "x-api-key": t.key } : { authorization: `Bearer ${t.key}` };
  return { ...auth, "anthropic-version": "2023-06-01", "content-type": "application/json" };
}

/** The API's root the agent appends its paths to: Claude adds /v1, Gemini CLI /v1beta, Codex's base carries it. */
const apiRoot = (t: Target) => (t.wire === "anthropic" ? `${t.base}/v1` : t.wire === "gemini" ? `${t.base}/v1beta` : t.base);

async function ask(t: Target, timeoutMs: number): Promise<CheckResult> {
  // One deadline for both requests, as the agent's first call would have.
  const until = Date.now() + timeoutMs;
  const send = (path: string, body?: string) =>
    httpRequest(`${apiRoot(t)}${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: headers(t),
      body,
      timeoutMs: Math.max(1, until - Date.now()),
      maxBytes: ANSWER_MAX_BYTES,
    });
  const list = answer(await send("/models"));
  const where = `${t.base} (key ${t.keyVar})`;
  const fail = (summary: string, details?: string[]): CheckResult => ({ name: "provider", mark: "fail", summary, details });
  if (list.refused) return fail(`${where} refused the key: ${list.refused}; check ${t.keyVar}`);
  if (list.problem && list.status !== 404) return fail(`${where}: ${list.problem}`);
  if (!list.problem) {
    const ids = modelIds(list.body);
    if (ids && t.model && !ids.includes(t.model))
      return fail(`${where} does not offer the model '${t.model}' (agent.provider.model)`, [
        `offered: ${ids.slice(0, 20).join(", ") || "none"}`,
      ]);
    if (ids) return ok(t, where, "listed");
  }
  // No models list (many gateways): one request of one token, with the model the agent asks for.
  if (!t.model) return fail(`${where} has no models list (${list.status}) and no model is configured to ask for`);
  const body =
    t.wire === "anthropic"
      ? { model: t.model, max_tokens: 1, messages: [{ role: "user", content: "ping" }] }
      : t.wire === "gemini"
        ? { contents: [{ role: "user", parts: [{ text: "ping" }] }], generationConfig: { maxOutputTokens: 1 } }
        : { model: t.model, max_output_tokens: 16, input: "ping" };
  const path =
    t.wire === "anthropic" ? "/messages" : t.wire === "gemini" ? `/models/${encodeURIComponent(t.model)}:generateContent` : "/responses";
  const one = answer(await send(path, JSON.stringify(body)));
  if (one.refused) return fail(`${where} refused the key: ${one.refused}; check ${t.keyVar}`);
  if (one.status === 404 || /model/i.test(one.problem ?? "")) return fail(`${where} does not know the model '${t.model}': ${one.problem}`);
  if (one.problem) return fail(`${where}: ${one.problem}`);
  return ok(t, where, "answered");
}

function ok(t: Target, where: string, how: "listed" | "answered"): CheckResult {
  return {
    name: "provider",
    mark: "ok",
    summary: t.model ? `${where} ${how === "listed" ? "lists" : "answered with"} the model '${t.model}'` : `${where} accepted the key`,
  };
}

interface Answer {
  status: number;
  body?: unknown;
  /** The key was refused (401/403): the provider's words. */
  refused?: string;
  /** Anything else wrong: a non-2xx, an HTML page, a 200 with an error, a body that is not JSON. */
  problem?: string;
}

function answer(res: HttpAnswer): Answer {
  const text = res.text;
  const type = res.headers["content-type"] ?? "";
  if (/html/i.test(type) || /^\s*<(!doctype|html)/i.test(text))
    return {
      status: res.status,
      problem: `answered an HTML page (${res.status}), not the model API: is the base URL the API's, with the path the preset expects?`,
    };
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    return { status: res.status, problem: `answered ${res.status} with a body that is not JSON: ${text.slice(0, 120)}` };
  }
  const said = errorOf(body);
  // Gemini's API answers a bad key 400 INVALID_ARGUMENT, its reason API_KEY_INVALID.
  const badKey = res.status === 400 && /API_KEY_INVALID|API key not valid/i.test(text);
  if (res.status === 401 || res.status === 403 || badKey) return { status: res.status, refused: `${res.status}${said ? ` ${said}` : ""}` };
  if (!res.ok) return { status: res.status, problem: `answered ${res.status}${said ? `: ${said}` : ""}` };
  if (said) return { status: res.status, problem: `answered 200 with an error: ${said}` };
  return { status: res.status, body };
}

/** The error an API body carries (`{error: {message}}`, `{type: "error", error}`), if any. */
function errorOf(body: unknown): string | undefined {
  if (!body || typeof body !== "object") return undefined;
  const e = (body as { error?: unknown }).error;
  if (e === undefined || e === null) return undefined;
  if (typeof e === "string") return e;
  const m = (e as { message?: unknown; type?: unknown }).message ?? (e as { type?: unknown }).type;
  return typeof m === "string" ? m : JSON.stringify(e).slice(0, 200);
}

/** The ids of a models list: Anthropic's and OpenAI's `data[].id`, Gemini's `models[].name` without its `models/`. */
function modelIds(body: unknown): string[] | undefined {
  const o = body && typeof body === "object" ? (body as { data?: unknown; models?: unknown }) : {};
  if (Array.isArray(o.data)) return o.data.map((m) => String((m as { id?: unknown }).id ?? "")).filter(Boolean);
  if (Array.isArray(o.models))
    return o.models.map((m) => String((m as { name?: unknown }).name ?? "").replace(/^models\//, "")).filter(Boolean);
  return undefined;
}

function networkCause(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; message?: string; code?: string };
  if (e.name === "TimeoutError") return `no answer within ${Math.round(timeoutMs / 1000)} s (it hangs)`;
  const code = e.code ?? "";
  if (code === "ECONNREFUSED") return "nothing listening there (connection refused)";
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return `the host is not found (${code})`;
  if (/CERT|TLS|SSL|ERR_SSL/i.test(code) || /certificate|TLS|SSL/i.test(e.message ?? "")) return `TLS failed: ${e.message ?? code}`;
  return `${e.message ?? String(err)}${code && !(e.message ?? "").includes(code) ? ` (${code})` : ""}`;
}
