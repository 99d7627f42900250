/**
 * The four model APIs the agents' presets speak, read and answered the way the agents use
 * them, for a model that runs on 127.0.0.1 in their place: `doctor`'s probe model (which only
 * records the tools an agent offers and answers with text) and the test suite's scripted
 * model. Each agent is pointed at it through its preset's base-URL setting (docs/agents.md).
 *
 *   anthropic         POST …/v1/messages                         Claude (claude-agent-acp)
 *   openai-responses  POST …/responses                           Codex (codex-acp)
 *   openai-chat       POST …/chat/completions                    opencode, qwen, kilo, goose, …
 *   gemini            POST …/models/{model}:streamGenerateContent Gemini CLI (also :generateContent)
 *
 * Streaming is answered as server-sent events in each API's event order (the agents all
 * stream); a request with `stream: false` (or gemini's :generateContent) gets one JSON body.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { readBody } from "../../base/http-body.js";
import type { Wire } from "../../presets/index.js";

/** One model request, reduced to what a stand-in model decides on. */
export interface WireRequest {
  wire: Wire;
  stream: boolean;
  model: string;
  /** The names of the tools the agent offered the model: the tools as the agent sees them. */
  tools: string[];
  /** The tool results in the latest message (the agent answering the model's calls), by call id. */
  toolResults: Array<{ callId: string; text: string }>;
  /** Every text the request carries (system prompt, messages), joined: what the model was shown. */
  text: string;
  /** Responses API tools grouped in a namespace (Codex's MCP tools): listed as `<namespace>__<name>`, called by both parts. */
  namespaced: Record<string, { namespace: string; name: string }>;
  body: unknown;
}

export interface ToolCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/** What the stand-in model answers: text, tool calls, or both; token counts as the API reports them. */
export interface WireAnswer {
  text?: string;
  toolCalls?: ToolCall[];
  usage?: { input: number; output: number };
}

/** Which API a request is for, by method and path; undefined for anything else (count_tokens included). */
export function wireOf(method: string | undefined, url: string | undefined): { wire: Wire; model?: string; stream?: boolean } | undefined {
  if (method !== "POST") return undefined;
  const path = (url ?? "").split("?")[0]!;
  if (/\/messages$/.test(path)) return { wire: "anthropic" };
  if (/\/responses$/.test(path)) return { wire: "openai-responses" };
  if (/\/chat\/completions$/.test(path)) return { wire: "openai-chat" };
  const g = /\/models\/([^/:]+):(streamGenerateContent|generateContent)$/.exec(path);
  if (g) return { wire: "gemini", model: decodeURIComponent(g[1]!), stream: g[2] === "streamGenerateContent" };
  return undefined;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v && typeof v === "object" && !Array.isArray(v) ? (v as Json) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string => (typeof v === "string" ? v : "");

/** Text out of the many shapes a message's content takes (a string, blocks with text, parts). */
function textOf(v: unknown): string {
  if (typeof v === "string") return v;
  if (Array.isArray(v)) return v.map(textOf).join("\n");
  const o = obj(v);
  return [o.text, o.content, o.output, o.parts, o.instructions].map((x) => (x === undefined ? "" : textOf(x))).join("\n");
}

/** Reads a request body of the given API. */
export function readRequest(route: { wire: Wire; model?: string; stream?: boolean }, body: unknown): WireRequest {
  const b = obj(body);
  const base = {
    wire: route.wire,
    body,
    namespaced: {},
    text: textOf([b.system, b.instructions, b.messages, b.input, b.contents, b.systemInstruction]),
  };
  switch (route.wire) {
    case "anthropic": {
      const last = obj(arr(b.messages).at(-1));
      const results = arr(last.content)
        .map(obj)
        .filter((c) => c.type === "tool_result")
        .map((c) => ({ callId: str(c.tool_use_id), text: textOf(c.content) }));
      return {
        ...base,
        stream: b.stream === true,
        model: str(b.model),
        tools: arr(b.tools).map((t) => str(obj(t).name)),
        toolResults: results,
      };
    }
    case "openai-responses": {
      // The conversation is the `input` list; the agent's latest step is what follows the last item it did not produce.
      const input = arr(b.input).map(obj);
      const results: WireRequest["toolResults"] = [];
      for (let i = input.length - 1; i >= 0; i--) {
        const item = input[i]!;
        if (item.type !== "function_call_output" && item.type !== "custom_tool_call_output") break;
        results.unshift({ callId: str(item.call_id), text: textOf(item.output) });
      }
      const namespaced: WireRequest["namespaced"] = {};
      const tools = arr(b.tools).flatMap((t) => {
        const o = obj(t);
        if (o.type !== "namespace") return [str(o.name) || str(o.type)];
        return arr(o.tools).map((x) => {
          const shown = `${str(o.name)}__${str(obj(x).name)}`;
          namespaced[shown] = { namespace: str(o.name), name: str(obj(x).name) };
          return shown;
        });
      });
      return { ...base, namespaced, stream: b.stream === true, model: str(b.model), tools, toolResults: results };
    }
    case "openai-chat": {
      const msgs = arr(b.messages).map(obj);
      const results: WireRequest["toolResults"] = [];
      for (let i = msgs.length - 1; i >= 0 && msgs[i]!.role === "tool"; i--)
        results.unshift({ callId: str(msgs[i]!.tool_call_id), text: textOf(msgs[i]!.content) });
      const tools = arr(b.tools).map((t) => str(obj(obj(t).function).name));
      return { ...base, stream: b.stream === true, model: str(b.model), tools, toolResults: results };
    }
    case "gemini": {
      const last = obj(arr(b.contents).at(-1));
      const results = arr(last.parts)
        .map((p) => obj(obj(p).functionResponse))
        .filter((f) => f.name !== undefined)
        .map((f) => ({ callId: str(f.id) || str(f.name), text: JSON.stringify(f.response ?? {}) }));
      const tools = arr(b.tools).flatMap((t) => arr(obj(t).functionDeclarations).map((f) => str(obj(f).name)));
      return { ...base, stream: route.stream === true, model: route.model ?? "", tools, toolResults: results };
    }
  }
}

/** The largest request body read: far above an agent's prompt with its tools and a few images. */
const MAX_REQUEST_BYTES = 64 * 1024 * 1024;

/** Reads and parses a JSON request body; rejects with a message for a body that is not JSON, or larger than MAX_REQUEST_BYTES. */
export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const raw = (await readBody(req, MAX_REQUEST_BYTES)).toString("utf8");
  try {
    return JSON.parse(raw || "{}");
  } catch (err) {
    throw new Error(`the request body is not JSON: ${(err as Error).message}`);
  }
}

/** Answers in the request's API, streamed when it asked for a stream. */
export function writeAnswer(res: ServerResponse, req: WireRequest, answer: WireAnswer, id: string): void {
  const stream = openAnswer(res, req, id);
  stream.finish(answer);
}

/**
 * Starts an answer: headers, and for a stream the events that open it (a model that then
 * stalls sends nothing more). `finish` writes the rest and ends the response.
 */
export function openAnswer(res: ServerResponse, req: WireRequest, id: string): { finish(answer: WireAnswer): void } {
  const model = req.model || "stand-in";
  if (!req.stream) {
    res.writeHead(200, { "content-type": "application/json" });
    return { finish: (a) => res.end(JSON.stringify(jsonAnswer(req, model, id, a))) };
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  const events = STREAMS[req.wire](model, id, req);
  for (const e of events.open()) res.write(e);
  return {
    finish: (a) => {
      for (const e of events.rest(a)) res.write(e);
      res.end();
    },
  };
}

const usageOf = (a: WireAnswer) => a.usage ?? { input: 100, output: 20 };
const sse = (data: unknown, event?: string) => `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`;

function jsonAnswer(req: WireRequest, model: string, id: string, a: WireAnswer): unknown {
  const u = usageOf(a);
  const calls = a.toolCalls ?? [];
  switch (req.wire) {
    case "anthropic":
      return {
        id,
        type: "message",
        role: "assistant",
        model,
        content: [
          ...(a.text ? [{ type: "text", text: a.text }] : []),
          ...calls.map((c) => ({ type: "tool_use", id: c.id, name: c.name, input: c.input })),
        ],
        stop_reason: calls.length ? "tool_use" : "end_turn",
        stop_sequence: null,
        usage: { input_tokens: u.input, output_tokens: u.output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      };
    case "openai-responses":
      return responsesObject(model, id, responsesItems(id, a, req.namespaced), u, "completed");
    case "openai-chat":
      return {
        id,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model,
        choices: [{ index: 0, message: chatMessage(a), finish_reason: calls.length ? "tool_calls" : "stop" }],
        usage: { prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.input + u.output },
      };
    case "gemini":
      return geminiChunk(model, geminiParts(a), true, u);
  }
}

interface EventStream {
  open(): string[];
  rest(a: WireAnswer): string[];
}

const STREAMS: Record<Wire, (model: string, id: string, req: WireRequest) => EventStream> = {
  anthropic: (model, id) => ({
    open: () => [
      sse(
        {
          type: "message_start",
          message: {
            id,
            type: "message",
            role: "assistant",
            model,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 0, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
          },
        },
        "message_start",
      ),
    ],
    rest: (a) => {
      const u = usageOf(a);
      const out: string[] = [];
      const ev = (type: string, data: Json) => out.push(sse({ type, ...data }, type));
      let index = 0;
      if (a.text) {
        ev("content_block_start", { index, content_block: { type: "text", text: "" } });
        ev("content_block_delta", { index, delta: { type: "text_delta", text: a.text } });
        ev("content_block_stop", { index: index++ });
      }
      for (const c of a.toolCalls ?? []) {
        ev("content_block_start", { index, content_block: { type: "tool_use", id: c.id, name: c.name, input: {} } });
        ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: JSON.stringify(c.input) } });
        ev("content_block_stop", { index: index++ });
      }
      ev("message_delta", {
        delta: { stop_reason: a.toolCalls?.length ? "tool_use" : "end_turn", stop_sequence: null },
        usage: { input_tokens: u.input, output_tokens: u.output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      });
      ev("message_stop", {});
      return out;
    },
  }),
  "openai-responses": (model, id, req) => ({
    open: () => [sse({ type: "response.created", sequence_number: 0, response: responsesObject(model, id, [], undefined, "in_progress") })],
    rest: (a) => {
      const out: string[] = [];
      let seq = 1;
      const ev = (type: string, data: Json) => out.push(sse({ type, sequence_number: seq++, ...data }));
      const items = responsesItems(id, a, req.namespaced);
      items.forEach((item, output_index) => {
        if (item.type === "message") {
          const text = a.text ?? "";
          ev("response.output_item.added", { output_index, item: { ...item, status: "in_progress", content: [] } });
          const part = { type: "output_text", text: "", annotations: [] };
          ev("response.content_part.added", { item_id: item.id, output_index, content_index: 0, part });
          ev("response.output_text.delta", { item_id: item.id, output_index, content_index: 0, delta: text, logprobs: [] });
          ev("response.output_text.done", { item_id: item.id, output_index, content_index: 0, text, logprobs: [] });
          ev("response.content_part.done", { item_id: item.id, output_index, content_index: 0, part: { ...part, text } });
        } else {
          ev("response.output_item.added", { output_index, item: { ...item, status: "in_progress", arguments: "" } });
          ev("response.function_call_arguments.delta", { item_id: item.id, output_index, delta: item.arguments });
          ev("response.function_call_arguments.done", { item_id: item.id, output_index, arguments: item.arguments });
        }
        ev("response.output_item.done", { output_index, item });
      });
      ev("response.completed", { response: responsesObject(model, id, items, usageOf(a), "completed") });
      return out;
    },
  }),
  "openai-chat": (model, id) => {
    const chunk = (delta: Json, finish: string | null, extra: Json = {}) =>
      sse({
        id,
        object: "chat.completion.chunk",
        created: Math.floor(Date.now() / 1000),
        model,
        choices: [{ index: 0, delta, finish_reason: finish }],
        ...extra,
      });
    return {
      open: () => [chunk({ role: "assistant", content: "" }, null)],
      rest: (a) => {
        const u = usageOf(a);
        const out: string[] = [];
        if (a.text) out.push(chunk({ content: a.text }, null));
        (a.toolCalls ?? []).forEach((c, index) =>
          out.push(
            chunk(
              { tool_calls: [{ index, id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(c.input) } }] },
              null,
            ),
          ),
        );
        out.push(
          chunk({}, a.toolCalls?.length ? "tool_calls" : "stop", {
            usage: { prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.input + u.output },
          }),
        );
        out.push("data: [DONE]\n\n");
        return out;
      },
    };
  },
  gemini: (model) => ({
    // Gemini sends nothing before its first candidate.
    open: () => [],
    rest: (a) => [sse(geminiChunk(model, geminiParts(a), true, usageOf(a)))],
  }),
};

type ResponsesItem =
  | { type: "message"; id: string; role: "assistant"; status: string; content: Json[] }
  | { type: "function_call"; id: string; call_id: string; name: string; namespace?: string; arguments: string; status: string };

function responsesItems(id: string, a: WireAnswer, namespaced: WireRequest["namespaced"]): ResponsesItem[] {
  return [
    ...(a.text
      ? [
          {
            type: "message" as const,
            id: `msg_${id}`,
            role: "assistant" as const,
            status: "completed",
            content: [{ type: "output_text", text: a.text, annotations: [] }],
          },
        ]
      : []),
    ...(a.toolCalls ?? []).map((c) => ({
      type: "function_call" as const,
      id: `fc_${c.id}`,
      call_id: c.id,
      ...(namespaced[c.name] ?? { name: c.name }),
      arguments: JSON.stringify(c.input),
      status: "completed",
    })),
  ];
}

function responsesObject(
  model: string,
  id: string,
  output: ResponsesItem[],
  u: { input: number; output: number } | undefined,
  status: string,
) {
  return {
    id: `resp_${id}`,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status,
    model,
    output,
    usage: u
      ? {
          input_tokens: u.input,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: u.output,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: u.input + u.output,
        }
      : null,
  };
}

function chatMessage(a: WireAnswer): Json {
  return {
    role: "assistant",
    content: a.text ?? null,
    ...(a.toolCalls?.length
      ? {
          tool_calls: a.toolCalls.map((c) => ({
            id: c.id,
            type: "function",
            function: { name: c.name, arguments: JSON.stringify(c.input) },
          })),
        }
      : {}),
  };
}

function geminiParts(a: WireAnswer): Json[] {
  return [
    ...(a.text ? [{ text: a.text }] : []),
    ...(a.toolCalls ?? []).map((c) => ({ functionCall: { id: c.id, name: c.name, args: c.input } })),
  ];
}

function geminiChunk(model: string, parts: Json[], last: boolean, u: { input: number; output: number }): Json {
  return {
    candidates: [{ content: { role: "model", parts }, ...(last ? { finishReason: "STOP" } : {}), index: 0 }],
    usageMetadata: { promptTokenCount: u.input, candidatesTokenCount: u.output, totalTokenCount: u.input + u.output },
    modelVersion: model,
  };
}
