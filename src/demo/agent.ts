/**
 * The scripted demo agent (`buzz-bridge demo-agent`): a real ACP agent over stdio (the
 * SDK's agent app API) with a real MCP client to the `mcpServers` it is given, and no
 * LLM. On a prompt it replies through the MCP tool `send_message` with a summary of what
 * it was given — channel name and description, whether team instructions are present
 * (their first line quoted), who asked and what — so a person sees context assembly
 * work. Without a `send_message` tool it writes the summary as its final message.
 * How it reads the prompt is documented in ./agent-parse.ts.
 *
 * Directives in the asked message (for tests; several may be combined):
 *   #final-only           reply only with final text (agent_message_chunk), no tool
 *   #silent               say nothing at all
 *   #tool <name> <json>   call that MCP tool with the JSON arguments, report the result
 *   #stop-hook            call the `_Stop` tool itself and report the answer
 *   #permission           ask session/request_permission, report the outcome
 *   #env                  report its environment variable NAMES and whether any value
 *                         looks like an nsec or a 64-hex secret
 *   #sysprompt            report whether session/new carried a systemPrompt
 *   #auth                 report which ACP auth method the client authenticated with
 *   #first-block          report the start of the prompt's first text block (what the
 *                         bridge put in front, e.g. a _PostCompact injection)
 *   #ask                  ask the client a form question (elicitation/create: a colour,
 *                         Red/Green/Blue or your own) and report the answer: its action
 *                         and content
 *   #history              report the prompt's history header (how many earlier messages)
 *   #attach-file          write a small text file in the working directory and attach
 *                         it to the reply (send_message `attachments`)
 *   #blocks               report the images and embedded files the prompt carried (type,
 *                         size, sha256 prefix, a text file's first line) and each line of
 *                         the prompt's attachment listings (what was given, what refused)
 *   #compact              emit compaction_update (in_progress, then completed)
 *   #progress             post a progress note first (send_message with progress: true,
 *                         before #slow)
 *   #reply-first          post an answer first (send_message without progress, before
 *                         #slow), then carry on as asked
 *   #slow <ms>            wait that long before answering (cancellable)
 *   #hold <file>          wait until that file exists before answering (cancellable;
 *                         before #slow): the test that wrote the file chose the moment
 *   #busy <ms>            spend that long in two tool calls (updates only: "Running npm
 *                         test with API_KEY=…", then "Reading build.log"), then answer
 *   #titles <file>        with #busy: report the tool calls in that JSON file instead
 *                         ([{ title, kind?, locations? }], kind defaulting to execute)
 *   #long <chars>         pad the reply with numbered filler lines to at least that length
 *   #stderr <text>        write <text> (the rest of the line) to its stderr
 *   #burst <n> [<chars>]  call send_message n times at once (each `burst i/n`, padded to
 *                         <chars> characters), report how many were sent and the first
 *                         error, then reply as usual
 *   #crash                exit(1) in the middle of the turn
 *   #crash-after-reply    exit(1) right after its first send_message (in a batch: after
 *                         answering the first message only)
 *   #hang                 one thought chunk, then no answer until session/cancel
 *                         (then stopReason cancelled)
 *   #ignore-cancel        like #hang, but ignores session/cancel
 *   #session              report the session: id, prompts so far, its first prompt,
 *                         model, effort and title
 *   #max-tokens           reply, then end the turn with stop reason max_tokens
 *   #max-turn-requests    reply, then end the turn with stop reason max_turn_requests
 *   #usage <in> <out> <usd>  report that usage for the turn: tokens in the prompt
 *                         answer's `usage`, the cost added to the session's running
 *                         total in a `usage_update` (ACP reports cost cumulatively)
 *
 * A turn carrying several messages (a channel-scope batch) is answered with one
 * `send_message` per message, each in that message's thread (reply_to its event id).
 *
 * Mid-turn messages (for the steer/interrupt tests and the bench): every reply ends with
 * `Received: <ISO time>` for the prompt and one `Steered in at <ISO time>: <text>` line per
 * message put into the running turn with `_session/steering`; when the prompt carries the
 * bridge's mid-turn framing its `Mid-turn:` line is reported as `Framing: <line>`, and each
 * `Correction` / `Added while you were working` / `Superseding message` label as `Labels: …`.
 * A prompt carrying the bridge's stop-gate objection gets one `Objection: [server] …` line
 * per objecting gate, so a test sees every gate's text, not only the prompt's last line.
 *
 * Capabilities: `loadSession: false`; `promptCapabilities` image (unless
 * DEMO_AGENT_NO_IMAGES=1) and embeddedContext; native steering (`_meta.steering.supported`, the
 * `_session/steering` method, honouring `idleBehavior: "promptRequired"`) only when
 * DEMO_AGENT_STEERING=1 (=refuse: advertised, but every steer is answered `failed`); modes
 * `default` and `bypassPermissions`; config options `model` (demo-small, demo-large) and
 * `effort` (category thought_level: low, medium, high); `sessionCapabilities.title`
 * (session/set_title);
 * `sessionCapabilities.systemPrompt` only when DEMO_AGENT_SYSTEM_PROMPT=1, so both
 * standing-context paths are testable; `sessionCapabilities.resume` only when
 * DEMO_AGENT_RESUME=1 (it keeps no history: a resumed session is a fresh one under the
 * old id, and an id starting with `gone-` is refused as not found); `mcpCapabilities.http`
 * only when DEMO_AGENT_MCP_HTTP=1 (it then connects to an `http` entry with the MCP SDK's
 * Streamable HTTP client, sending the entry's headers).
 */
import { createHash, randomUUID } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/unstable";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { parsePrompt, type ParsedPrompt } from "./agent-parse.js";
import { sleep } from "../base/backoff.js";
import { STEER_METHOD } from "../agent/steering.js";

interface DemoSession {
  id: string;
  /** The session's working directory (session/new's cwd): its MCP servers run and its files are written there. */
  cwd?: string;
  systemPrompt?: acp.SystemPrompt | null;
  servers: acp.McpServer[];
  mcp?: Promise<McpLink>;
  turn?: AbortController;
  /** Messages steered into the running turn, with when they arrived. */
  steered: Array<{ at: number; text: string }>;
  mode: string;
  model: string;
  effort: string;
  title?: string;
  prompts: number;
  firstPrompt?: string;
  /** Cumulative cost reported so far (USD). */
  cost: number;
}

interface McpLink {
  clients: Array<{ client: Client; tools: string[] }>;
  error?: string;
}

/** The method the client passed to `authenticate`, if any (reported by #auth). */
let authenticatedWith: string | undefined;
/** What the client said it takes at initialize (#ask needs form elicitation). */
let clientCaps: acp.ClientCapabilities | undefined;

const MODES: acp.SessionMode[] = [
  { id: "default", name: "Default", description: "asks before acting" },
  { id: "bypassPermissions", name: "Bypass permissions", description: "never asks" },
];

const MODELS = ["demo-small", "demo-large"];
const EFFORTS = ["low", "medium", "high"];

function configOptions(s: DemoSession): acp.SessionConfigOption[] {
  return [
    {
      id: "model",
      name: "Model",
      category: "model",
      type: "select",
      currentValue: s.model,
      options: MODELS.map((m) => ({ value: m, name: m })),
    },
    {
      id: "effort",
      name: "Reasoning effort",
      category: "thought_level",
      type: "select",
      currentValue: s.effort,
      options: EFFORTS.map((e) => ({ value: e, name: e })),
    },
  ];
}

const NSEC = /nsec1[02-9ac-hj-np-z]{20,}/;
const HEX64 = /(^|[^0-9a-fA-F])[0-9a-fA-F]{64}([^0-9a-fA-F]|$)/;

async function connectMcp(servers: acp.McpServer[], cwd?: string): Promise<McpLink> {
  const link: McpLink = { clients: [] };
  if (servers.length === 0) return link;
  // Loaded on demand so `initialize` is answered before the MCP SDK is parsed.
  const [{ Client }, { StdioClientTransport }, { StreamableHTTPClientTransport }] = await Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/client/stdio.js"),
    import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
  ]);
  const pairs = (list: Array<{ name: string; value: string }>) => Object.fromEntries(list.map((e) => [e.name, e.value]));
  for (const s of servers) {
    if ("type" in s && s.type === "sse") continue;
    try {
      const client = new Client({ name: "buzz-bridge-demo-agent", version: "0.1.0" });
      if ("type" in s && s.type === "http") {
        await client.connect(new StreamableHTTPClientTransport(new URL(s.url), { requestInit: { headers: pairs(s.headers) } }));
      } else {
        const stdio = s as acp.McpServerStdio;
        await client.connect(
          new StdioClientTransport({ command: stdio.command, args: stdio.args, env: pairs(stdio.env), cwd, stderr: "inherit" }),
        );
      }
      const { tools } = await client.listTools();
      link.clients.push({ client, tools: tools.map((t) => t.name) });
    } catch (err) {
      link.error = `${s.name}: ${(err as Error).message}`;
      process.stderr.write(`demo-agent: MCP server ${s.name} failed: ${(err as Error).message}\n`);
    }
  }
  return link;
}

function toolText(result: unknown): string {
  const r = result as { content?: Array<{ type: string; text?: string }>; isError?: boolean };
  const text = (r.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
  return r.isError ? `error: ${text}` : text;
}

interface SteerParams {
  sessionId: string;
  prompt: acp.ContentBlock[];
  _meta?: { steering?: { idleBehavior?: string } };
}

interface SteerResult {
  outcome: "injected" | "promptRequired" | "startedNewTurn" | "failed";
  reason?: string;
}

/** A time a person reads and a script parses back (`Date.parse`): ISO 8601 with milliseconds. */
const clock = (ms: number) => new Date(ms).toISOString();

/** What the mid-turn tests read: when the prompt came, what was steered in, how it was framed. */
function midTurnReport(text: string, receivedAt: number, steered: DemoSession["steered"]): string[] {
  const lines = [`Received: ${clock(receivedAt)}`];
  for (const st of steered) lines.push(`Steered in at ${clock(st.at)}: ${st.text}`);
  const framing = /^Mid-turn:.*$/m.exec(text);
  if (framing) lines.push(`Framing: ${framing[0].slice(0, 200)}`);
  const labels = [...text.matchAll(/^(Correction|Added while you were working|Superseding message)\b[^\n]*/gm)].map((m) => m[1]);
  if (labels.length) lines.push(`Labels: ${labels.join(", ")}`);
  return lines;
}

/**
 * What #blocks reports: each image or embedded file the prompt carried (type, size, the
 * start of its sha256, a text file's first line and its uri), then each line of the prompt's
 * attachment listings, so a test sees what reached the agent and what was refused and why.
 */
function blocksReport(prompt: acp.ContentBlock[], text: string): string[] {
  const lines: string[] = [];
  for (const b of prompt) {
    if (b.type === "image") {
      const bytes = Buffer.from(b.data, "base64");
      lines.push(
        `block: image ${b.mimeType} ${bytes.length} bytes sha256 ${createHash("sha256").update(bytes).digest("hex").slice(0, 16)}`,
      );
    } else if (b.type === "resource" && "text" in b.resource) {
      const first = b.resource.text.split("\n")[0]!.slice(0, 80);
      lines.push(
        `block: resource ${b.resource.mimeType ?? "?"} ${b.resource.text.length} chars first line ${JSON.stringify(first)} uri ${b.resource.uri}`,
      );
    }
  }
  if (!lines.length) lines.push("block: none");
  for (const m of text.matchAll(/^\d+\. .* — (?:given to you|not given to you:).*$/gm)) lines.push(`listed: ${m[0]}`);
  return lines;
}

/** The gates' objections in a stop-gate re-prompt (turn/stop-gates.ts's `[server] text` paragraphs). */
function objectionReport(text: string): string[] {
  if (!/^Stop gate objection:/m.test(text)) return [];
  return [...text.matchAll(/^\[([^\]\n]+)\] ([^\n]*)/gm)].map((m) => `Objection: [${m[1]}] ${m[2]}`);
}

function summary(p: ParsedPrompt): string {
  const lines = [
    `Channel: ${p.channel ?? "(unknown)"}${p.description ? ` — ${p.description}` : " (no description)"}`,
    `Team instructions: ${p.teamInstructions ? `present ("${p.teamInstructions}")` : "none"}`,
    `Asked by: ${p.author ?? "(unknown)"}`,
    `Asked: ${p.asked || "(nothing)"}`,
  ];
  return `Demo agent here, no LLM. Here is what I was given:\n${lines.join("\n")}`;
}

/** #attach-file: a small text file in the session's working directory, named by the prompt's number; returns its name there. */
function writeAttachment(cwd: string | undefined, n: number): string {
  const name = `demo-attachment-${n}.txt`;
  writeFileSync(cwd ? join(cwd, name) : name, `attached by the demo agent (prompt ${n})\n`);
  return name;
}

/** `#burst`: n send_message calls at once; what came back, in one line. */
async function burst(b: { count: number; chars: number }, call: (name: string, args: Record<string, unknown>) => Promise<string>) {
  const results = await Promise.all(
    Array.from({ length: b.count }, (_, i) => {
      const head = `burst ${i + 1}/${b.count}`;
      return call("send_message", { content: head.padEnd(Math.max(b.chars, head.length), ".") });
    }),
  );
  const failed = results.filter((r) => !r.includes("event_id"));
  return `burst: ${results.length - failed.length} sent, ${failed.length} refused${failed.length ? `; first: ${failed[0]!.slice(0, 300)}` : ""}`;
}

/** Exits as a crash would, the moment a directive asks for it. */
function crashNow(): never {
  process.exit(1);
}

/** Runs the agent on the given streams until the client goes away. */
export async function runDemoAgent(
  input: NodeJS.ReadableStream = process.stdin,
  output: NodeJS.WritableStream = process.stdout,
): Promise<void> {
  const sessions = new Map<string, DemoSession>();
  const offersSystemPrompt = process.env.DEMO_AGENT_SYSTEM_PROMPT === "1";
  const offersResume = process.env.DEMO_AGENT_RESUME === "1";
  const offersSteering = process.env.DEMO_AGENT_STEERING === "1" || process.env.DEMO_AGENT_STEERING === "refuse";
  const refusesSteers = process.env.DEMO_AGENT_STEERING === "refuse";
  const offersHttp = process.env.DEMO_AGENT_MCP_HTTP === "1";
  const openSession = (
    id: string,
    params: { cwd?: string; systemPrompt?: acp.SystemPrompt | null; mcpServers?: acp.McpServer[]; _meta?: Record<string, unknown> | null },
  ) => {
    if (params.systemPrompt && !offersSystemPrompt) throw acp.RequestError.invalidParams(undefined, "systemPrompt not supported");
    const metaTitle = params._meta?.sessionTitle;
    const s: DemoSession = {
      id,
      cwd: params.cwd,
      systemPrompt: params.systemPrompt,
      servers: params.mcpServers ?? [],
      steered: [],
      mode: "default",
      model: MODELS[0]!,
      effort: "medium",
      title: typeof metaTitle === "string" ? metaTitle : undefined,
      prompts: 0,
      cost: 0,
    };
    // Connect now, as real agents do, so the first prompt does not wait for the servers.
    s.mcp = connectMcp(s.servers, s.cwd);
    sessions.set(id, s);
    return { modes: { currentModeId: s.mode, availableModes: MODES }, configOptions: configOptions(s) };
  };

  const prompt = async (params: acp.PromptRequest, client: acp.AgentContext): Promise<acp.PromptResponse> => {
    const s = sessions.get(params.sessionId);
    if (!s) throw acp.RequestError.sessionNotFound(params.sessionId);
    const receivedAt = Date.now();
    const turn = new AbortController();
    s.turn = turn;
    s.steered = [];
    const up = (update: acp.SessionUpdate) => client.notify(acp.methods.client.session.update, { sessionId: s.id, update });
    const say = (text: string) => up({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
    // Only the bridge's text sections: an attached file's text is reported by #blocks, never read as the request.
    const text = params.prompt.map((b) => (b.type === "text" ? b.text : "")).join("\n");
    const sys = (s.systemPrompt?.content ?? []).map((b) => (b.type === "text" ? b.text : "")).join("\n");
    const parsed = parsePrompt(text, sys);
    const d = parsed.directives;
    s.prompts++;
    s.firstPrompt ??= text.slice(0, 120);
    const cancelled = (): acp.PromptResponse => {
      if (s.turn === turn) s.turn = undefined;
      return { stopReason: "cancelled" };
    };

    if (d.hang || d.ignoreCancel) {
      // One update first, so a test can cancel once the turn is surely running.
      await up({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "hanging until cancelled" } });
    }
    if (d.ignoreCancel) await new Promise(() => {});
    if (d.hang) {
      // A cancel may have come while the thought went out: an abort already fired calls no listener.
      if (!turn.signal.aborted) await new Promise<void>((r) => turn.signal.addEventListener("abort", () => r(), { once: true }));
      return cancelled();
    }
    if (d.crash) {
      await say("About to crash, as asked.");
      setTimeout(() => process.exit(1), 20);
      await new Promise(() => {});
    }
    const reports: string[] = [];
    // Awaited only when a tool is needed: the servers start in the background at session/new.
    const linkOf = async (): Promise<McpLink> => (s.mcp ? await s.mcp : { clients: [] });
    const findTool = async (name: string) => (await linkOf()).clients.find((c) => c.tools.includes(name));
    let callSeq = 0;
    const callTool = async (name: string, args: Record<string, unknown>): Promise<string> => {
      const link = await linkOf();
      const owner = await findTool(name);
      const toolCallId = `call-${++callSeq}`;
      await up({ sessionUpdate: "tool_call", toolCallId, title: name, kind: "other", status: "in_progress", rawInput: args });
      if (!owner) {
        await up({ sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
        return `no tool named ${name}${link.error ? ` (${link.error})` : ""}`;
      }
      try {
        const res = await owner.client.callTool({ name, arguments: args });
        await up({ sessionUpdate: "tool_call_update", toolCallId, status: "completed", rawOutput: res });
        return toolText(res);
      } catch (err) {
        await up({ sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
        return `error: ${(err as Error).message}`;
      }
    };

    if (d.progress) await callTool("send_message", { content: "Working on it (a progress note).", progress: true });
    if (d.replyFirst) await callTool("send_message", { content: `A first answer, before the rest. ${summary(parsed)}` });
    if (d.busyMs !== undefined) {
      // Two tool calls the bridge's "still working" note names (the first carries a secret it must redact).
      type Step = { title: string; kind?: acp.ToolKind; locations?: acp.ToolCallLocation[] };
      const steps: Step[] = d.titlesFile
        ? (JSON.parse(readFileSync(d.titlesFile, "utf8")) as Step[])
        : [{ title: "Running npm test with API_KEY=sk-demo-0123456789abcdefghij" }, { title: "Reading build.log" }];
      for (const [i, step] of steps.entries()) {
        const call = { toolCallId: `busy-${i}`, title: step.title, kind: step.kind ?? "execute", locations: step.locations };
        await up({ sessionUpdate: "tool_call", ...call, status: "in_progress" });
        await sleep(d.busyMs / steps.length, turn.signal);
        await up({ sessionUpdate: "tool_call_update", toolCallId: `busy-${i}`, status: "completed" });
        if (turn.signal.aborted) return cancelled();
      }
    }
    if (d.holdFile !== undefined) {
      while (!existsSync(d.holdFile) && !turn.signal.aborted) await sleep(25, turn.signal);
      if (turn.signal.aborted) return cancelled();
    }
    if (d.slowMs !== undefined) {
      await sleep(d.slowMs, turn.signal);
      if (turn.signal.aborted) return cancelled();
    }

    if (d.compact) {
      const compactionId = randomUUID();
      await up({ sessionUpdate: "compaction_update", compactionId, status: "in_progress" });
      await up({
        sessionUpdate: "compaction_update",
        compactionId,
        status: "completed",
        summary: [{ type: "text", text: "nothing much happened" }],
      });
      reports.push("compaction: done");
    }
    if (d.sysprompt) {
      reports.push(s.systemPrompt ? `systemPrompt: yes (mode ${s.systemPrompt.mode}, ${sys.length} chars)` : "systemPrompt: no");
    }
    if (d.auth) reports.push(`authenticated: ${authenticatedWith ?? "no"}`);
    if (d.session) {
      reports.push(
        `session: ${s.id}; prompts: ${s.prompts}; first prompt: ${JSON.stringify(s.firstPrompt)}; model: ${s.model}; effort: ${s.effort}; title: ${JSON.stringify(s.title ?? null)}`,
      );
    }
    if (d.firstBlock) {
      const first = params.prompt.find((b) => b.type === "text");
      reports.push(`first block: ${JSON.stringify(first?.type === "text" ? first.text.slice(0, 300) : null)}`);
    }
    if (d.blocks) reports.push(...blocksReport(params.prompt, text));
    if (d.history) reports.push(`history: ${/^History: .*$/m.exec(text)?.[0] ?? "none"}`);
    if (d.env) {
      const values = Object.values(process.env).filter((v): v is string => typeof v === "string");
      const secretLike = values.some((v) => NSEC.test(v) || HEX64.test(v));
      reports.push(`env names: ${Object.keys(process.env).sort().join(",")}`, `env secret-like value: ${secretLike ? "yes" : "no"}`);
    }
    if (d.permission) {
      const toolCallId = `perm-${randomUUID().slice(0, 8)}`;
      await up({ sessionUpdate: "tool_call", toolCallId, title: "demo: touch a file", kind: "edit", status: "pending" });
      const res = await client.request(acp.methods.client.session.requestPermission, {
        sessionId: s.id,
        toolCall: { toolCallId, title: "demo: touch a file", kind: "edit" },
        // Unusual ids on purpose: the client must choose by kind.
        options: [
          { optionId: "demo-yes-always", name: "Always allow", kind: "allow_always" },
          { optionId: "demo-yes", name: "Allow", kind: "allow_once" },
          { optionId: "demo-no", name: "Reject", kind: "reject_once" },
          { optionId: "demo-never", name: "Never", kind: "reject_always" },
        ],
      });
      if (res.outcome.outcome === "cancelled") {
        await up({ sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
        return cancelled();
      }
      const verdict = res.outcome.optionId.startsWith("demo-yes") ? "allowed" : "denied";
      await up({ sessionUpdate: "tool_call_update", toolCallId, status: verdict === "allowed" ? "completed" : "failed" });
      reports.push(`permission: ${verdict} (${res.outcome.optionId})`);
    }
    if (d.ask) {
      if (!clientCaps?.elicitation?.form) reports.push("question: the client takes no form questions");
      else {
        const res = await client.request(acp.methods.client.elicitation.create, {
          sessionId: s.id,
          mode: "form",
          message: "Which colour should the button be?",
          requestedSchema: {
            type: "object",
            properties: {
              question_0: {
                type: "string",
                title: "Colour",
                oneOf: [
                  { const: "red", title: "Red" },
                  { const: "green", title: "Green", description: "the brand colour" },
                  { const: "blue", title: "Blue" },
                ],
              },
              question_0_custom: { type: "string", title: "Other", description: "Your own colour" },
            },
          },
        });
        reports.push(`question: ${res.action}${"content" in res && res.content ? ` ${JSON.stringify(res.content)}` : ""}`);
      }
    }
    for (const t of d.tools) reports.push(`tool ${t.name}: ${await callTool(t.name, t.args)}`);
    if (d.burst) reports.push(await burst(d.burst, callTool));
    if (d.stderr !== undefined) process.stderr.write(`${d.stderr}\n`);
    if (d.stopHook) reports.push(`_Stop: ${JSON.stringify(await callTool("_Stop", {}))}`);
    if (turn.signal.aborted) return cancelled();

    const stopReason = d.maxTokens ? ("max_tokens" as const) : d.maxTurnRequests ? ("max_turn_requests" as const) : ("end_turn" as const);
    const usage = d.usage
      ? { inputTokens: d.usage.inputTokens, outputTokens: d.usage.outputTokens, totalTokens: d.usage.inputTokens + d.usage.outputTokens }
      : undefined;
    if (d.usage) {
      s.cost += d.usage.cost;
      await up({
        sessionUpdate: "usage_update",
        used: d.usage.inputTokens + d.usage.outputTokens,
        size: 200_000,
        cost: { amount: s.cost, currency: "USD" },
      });
    }
    if (d.silent) return endTurn(s, turn, { stopReason, ...(usage ? { usage } : {}) });
    reports.push(...midTurnReport(text, receivedAt, s.steered), ...objectionReport(text));
    let reply = [summary(parsed), ...reports].join("\n");
    if (d.longChars !== undefined) {
      const filler: string[] = [];
      for (let n = 1, size = reply.length; size < d.longChars; n++) {
        const l = `filler line ${String(n).padStart(7, "0")}: the demo agent was asked for a long reply.`;
        filler.push(l);
        size += l.length + 1;
      }
      reply = [reply, ...filler].join("\n");
    }
    if (!d.finalOnly && parsed.batch.length > 1 && (await findTool("send_message"))) {
      // Several askers: each gets an answer in their own thread (the last one with the reports).
      const results: string[] = [];
      for (const [i, m] of parsed.batch.entries()) {
        if (turn.signal.aborted) return cancelled();
        const last = i === parsed.batch.length - 1;
        const content = last ? reply : summary({ ...parsed, asked: m.asked });
        results.push((await callTool("send_message", { content, reply_to: m.id })).slice(0, 80));
        if (d.crashAfterReply) crashNow();
      }
      await say(`Replied to ${results.length} messages in their threads.`);
    } else if (!d.finalOnly && (await findTool("send_message"))) {
      const attachments = d.attachFile ? [{ path: writeAttachment(s.cwd, s.prompts), alt: "a file the demo agent wrote" }] : undefined;
      const result = await callTool("send_message", { content: reply, ...(attachments ? { attachments } : {}) });
      if (d.crashAfterReply) crashNow();
      await say(`Replied in the thread (${result.slice(0, 200)}).`);
    } else {
      await say(reply);
    }
    return endTurn(s, turn, { stopReason, ...(usage ? { usage } : {}) });
  };

  /** The turn is over: a steer arriving from now on finds no running turn. */
  const endTurn = (s: DemoSession, turn: AbortController, response: acp.PromptResponse): acp.PromptResponse => {
    if (s.turn === turn) s.turn = undefined;
    return response;
  };

  const steer = (params: SteerParams, client: acp.AgentContext): SteerResult => {
    const s = sessions.get(params.sessionId);
    if (!s) throw acp.RequestError.sessionNotFound(params.sessionId);
    const text = params.prompt.map((b) => (b.type === "text" ? b.text : "")).join("\n");
    if (refusesSteers) return { outcome: "failed" };
    if (s.turn && !s.turn.signal.aborted) {
      s.steered.push({ at: Date.now(), text: parsePrompt(text).asked });
      return { outcome: "injected" };
    }
    if (params._meta?.steering?.idleBehavior === "promptRequired") return { outcome: "promptRequired", reason: "noRunningTurn" };
    void prompt({ sessionId: s.id, prompt: params.prompt }, client).catch(() => undefined);
    return { outcome: "startedNewTurn" };
  };

  const initializeAnswer = (): acp.InitializeResponse => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: {
      loadSession: false,
      promptCapabilities: { embeddedContext: true, image: process.env.DEMO_AGENT_NO_IMAGES !== "1" },
      mcpCapabilities: { http: offersHttp, sse: false },
      sessionCapabilities: { title: {}, ...(offersSystemPrompt ? { systemPrompt: {} } : {}), ...(offersResume ? { resume: {} } : {}) },
    },
    agentInfo: { name: "buzz-bridge-demo-agent", version: "0.1.0" },
    ...(offersSteering ? { _meta: { steering: { supported: true } } } : {}),
    // One method, so an operator's agent.auth_method (codex-acp needs "api-key") is testable.
    authMethods: [{ id: "demo-token", name: "Demo token", description: "accepted without checking anything" }],
  });
  const stream = acp.ndJsonStream(
    Writable.toWeb(output as Writable) as WritableStream<Uint8Array>,
    Readable.toWeb(input as Readable) as ReadableStream<Uint8Array>,
  );
  const connection = acp
    .agent({ name: "buzz-bridge-demo-agent" })
    .onRequest(acp.methods.agent.initialize, ({ params }) => {
      clientCaps = params.clientCapabilities ?? undefined;
      return initializeAnswer();
    })
    .onRequest(acp.methods.agent.authenticate, ({ params }) => {
      if (params.methodId !== "demo-token")
        throw acp.RequestError.invalidParams({ methodId: params.methodId }, `unknown auth method ${params.methodId}`);
      authenticatedWith = params.methodId;
      return {};
    })
    .onRequest(acp.methods.agent.session.new, ({ params }) => {
      const id = randomUUID();
      return { sessionId: id, ...openSession(id, params) };
    })
    .onRequest(acp.methods.agent.session.resume, ({ params }) => {
      if (!offersResume) throw acp.RequestError.methodNotFound("session/resume");
      if (params.sessionId.startsWith("gone-")) throw acp.RequestError.sessionNotFound(params.sessionId);
      return openSession(params.sessionId, params);
    })
    .onRequest(acp.methods.agent.session.setMode, ({ params }) => {
      const s = sessions.get(params.sessionId);
      if (!s) throw acp.RequestError.sessionNotFound(params.sessionId);
      if (!MODES.some((m) => m.id === params.modeId)) throw acp.RequestError.invalidParams(undefined, `unknown mode ${params.modeId}`);
      s.mode = params.modeId;
      return {};
    })
    .onRequest(acp.methods.agent.session.setConfigOption, ({ params }) => {
      const s = sessions.get(params.sessionId);
      if (!s) throw acp.RequestError.sessionNotFound(params.sessionId);
      const value = String(params.value);
      if (params.configId === "model" && MODELS.includes(value)) s.model = value;
      else if (params.configId === "effort" && EFFORTS.includes(value)) s.effort = value;
      else throw acp.RequestError.invalidParams(undefined, `unknown config option ${params.configId}=${value}`);
      return { configOptions: configOptions(s) };
    })
    .onRequest(acp.methods.agent.session.setTitle, ({ params }) => {
      const s = sessions.get(params.sessionId);
      if (!s) throw acp.RequestError.sessionNotFound(params.sessionId);
      s.title = params.title;
      return { title: params.title };
    })
    .onRequest(acp.methods.agent.session.prompt, ({ params, client }) => prompt(params, client))
    .onRequest(
      STEER_METHOD,
      (raw: unknown) => {
        if (!offersSteering) throw acp.RequestError.methodNotFound(STEER_METHOD);
        return raw as SteerParams;
      },
      ({ params, client }) => steer(params, client),
    )
    .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
      const s = sessions.get(params.sessionId);
      s?.turn?.abort();
    })
    .connect(stream);
  await connection.closed;
  await Promise.all(
    [...sessions.values()].map(async (s) => {
      const link = await s.mcp?.catch(() => undefined);
      await Promise.all((link?.clients ?? []).map((c) => c.client.close().catch(() => {})));
    }),
  );
}
