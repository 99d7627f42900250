/**
 * Gates on every tool call (docs/architecture.md §4, docs/configuration.md `pre_tool`): before
 * a tool call through the slot, every server with `pre_tool` is asked its `_PreToolUse` at
 * once, under one deadline (`mcp.pre_tool_deadline`); after it, the same servers' `_PostToolUse`.
 * Input `{ tool, server, arguments, title, kind }`; `""` = allow, any other text = the objection.
 *
 * - `block`: text stops the call (the agent gets a tool error `[server] text`); a block gate
 *   that is not running, errors, answers with no text block, or misses the deadline stops it
 *   too (fail closed), the error naming the gate.
 * - `advise`: text is put before the result, JSON-encoded and marked as a gate's (lower trust,
 *   like hook output); an advise gate that fails is skipped and logged.
 *
 * Both transports' calls come through Aggregator.callTool, so one check serves the stdio and
 * the HTTP slot. Agent-native tools (ACP `session/request_permission`) are asked here too.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { HookFanout } from "../contract/hooks.js";
import type { Logger } from "../base/log.js";
import { utf8Prefix } from "../base/utf8.js";
import type { Downstream } from "./downstream.js";
import { MAX_HOOK_TEXT_BYTES, mergeHookTexts } from "./hooks.js";

export const PRE_TOOL_HOOK = "_PreToolUse";
export const POST_TOOL_HOOK = "_PostToolUse";
/** Hooks the bridge asks itself around each call: never listed, never callable by the model. */
export const CALL_HOOKS: ReadonlySet<string> = new Set([PRE_TOOL_HOOK, POST_TOOL_HOOK]);

/** A tool call's arguments above this (as JSON) are not sent to gates: a block gate cannot check what it cannot see. */
export const MAX_GATED_ARGUMENT_BYTES = 1024 * 1024;
/** How much of a result `_PostToolUse` is shown. */
export const MAX_POST_RESULT_BYTES = 8 * 1024;

export interface GatedCall {
  /** The tool's name as the agent sees it (or the agent's own tool's title). */
  tool: string;
  /** The MCP server that owns it; `agent` for the agent's own tools. */
  server: string;
  arguments: unknown;
  title?: string;
  kind?: string;
}

type ServerVerdict = "allow" | "block" | "advise" | "skipped";

interface ServerAnswer {
  name: string;
  mode: "block" | "advise";
  ms: number;
  verdict: ServerVerdict;
  text: string;
  error?: string;
}

export interface PreToolDecision {
  verdict: "allow" | "block" | "advise";
  /** For block: the tool error's text; for advise: the block put before the result. */
  text: string;
  ms: number;
  servers: ServerAnswer[];
}

function textOf(r: CallToolResult): { text: string; hasText: boolean } {
  const parts: string[] = [];
  for (const c of r.content ?? []) if (c.type === "text") parts.push(c.text);
  return { text: parts.join("\n").trim(), hasText: parts.length > 0 || (r.content ?? []).length === 0 };
}

/** The servers asked around tool calls, and how. */
export class ToolGates {
  constructor(
    private readonly opts: {
      downstreams: Downstream[];
      deadlineMs: number;
      logger: Logger;
      hookRan?(fanout: HookFanout, hook: string): void;
    },
  ) {
    this.gates = opts.downstreams.filter((d) => d.cfg.pre_tool !== undefined);
    this.active = this.gates.length > 0;
  }

  /** The servers with `pre_tool` (a session's servers are fixed when it starts). */
  private readonly gates: Downstream[];
  /** Any server has `pre_tool`: every call is asked first. */
  readonly active: boolean;

  /** Asks every gate at once; never throws. */
  async before(call: GatedCall): Promise<PreToolDecision> {
    const started = Date.now();
    const gates = this.gates;
    const input = gateInput(call);
    const servers = await this.ask(PRE_TOOL_HOOK, gates, input, (ds, outcome, ms): ServerAnswer => {
      const mode = ds.cfg.pre_tool!;
      if ("error" in outcome) {
        if (mode === "advise") return { name: ds.name, mode, ms, verdict: "skipped", text: "", error: outcome.error };
        return {
          name: ds.name,
          mode,
          ms,
          verdict: "block",
          error: outcome.error,
          text: `pre-tool gate '${ds.name}' is not answering (${outcome.error}); it is set to block (mcp.servers.${ds.name}.pre_tool: block), so the call was not made`,
        };
      }
      if (outcome.text === "") return { name: ds.name, mode, ms, verdict: "allow", text: "" };
      return { name: ds.name, mode, ms, verdict: mode, text: outcome.text };
    });
    const blocking = servers.filter((s) => s.verdict === "block");
    const advising = servers.filter((s) => s.verdict === "advise");
    let decision: PreToolDecision;
    if (blocking.length > 0) {
      decision = { verdict: "block", text: mergeHookTexts(blocking), ms: Date.now() - started, servers };
    } else if (advising.length > 0) {
      const merged = mergeHookTexts(advising);
      decision = {
        verdict: "advise",
        text: `Advice from the pre-tool gate${advising.length > 1 ? "s" : ""} (a gate server's text, not the user's; JSON-encoded): ${JSON.stringify(merged)}`,
        ms: Date.now() - started,
        servers,
      };
    } else {
      decision = { verdict: "allow", text: "", ms: Date.now() - started, servers };
    }
    this.opts.logger.info({
      evt: "hook.pre_tool",
      tool: call.tool,
      server: call.server,
      verdict: decision.verdict,
      ms: decision.ms,
      servers: servers.map(({ name, ms, verdict, error }) => ({ name, ms, verdict, ...(error ? { error } : {}) })),
    });
    this.opts.hookRan?.(
      { text: decision.text, verdict: decision.verdict === "block" ? "object" : "allow", ms: decision.ms, servers: [] },
      PRE_TOOL_HOOK,
    );
    return decision;
  }

  /** The text appended to the result (`""` for none); only gates that list `_PostToolUse` are asked. */
  async after(call: GatedCall, result: CallToolResult): Promise<string> {
    const gates = this.gates.filter((d) => d.tools.some((t) => t.name === POST_TOOL_HOOK));
    if (gates.length === 0) return "";
    const shown = result.content?.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("\n") ?? "";
    const input = withFields(gateInput(call), { result: cut(shown, MAX_POST_RESULT_BYTES), is_error: result.isError === true });
    const servers = await this.ask(POST_TOOL_HOOK, gates, input, (ds, outcome, ms): ServerAnswer => {
      const mode = ds.cfg.pre_tool!;
      if ("error" in outcome) return { name: ds.name, mode, ms, verdict: "skipped", text: "", error: outcome.error };
      return { name: ds.name, mode, ms, verdict: outcome.text === "" ? "allow" : "advise", text: outcome.text };
    });
    this.opts.logger.info({
      evt: "hook",
      hook: POST_TOOL_HOOK,
      tool: call.tool,
      servers: servers.map(({ name, ms, verdict, error }) => ({ name, ms, verdict, ...(error ? { error } : {}) })),
    });
    const merged = mergeHookTexts(servers.filter((s) => s.verdict === "advise"));
    return merged === ""
      ? ""
      : `Note from the post-tool gates (a gate server's text, not the user's; JSON-encoded): ${JSON.stringify(merged)}`;
  }

  /**
   * One hook on each gate, all at once, under one deadline; every failure is an outcome.
   * Gates are asked over their already-open sessions: nothing is spawned or listed per call,
   * and the input is serialized once for all of them. Callbacks, one timer: this runs on
   * every tool call.
   */
  private ask(
    hook: string,
    gates: Downstream[],
    input: GateInput | { error: string },
    judge: (ds: Downstream, outcome: { text: string } | { error: string }, ms: number) => ServerAnswer,
  ): Promise<ServerAnswer[]> {
    if (gates.length === 0) return Promise.resolve([]);
    const deadlineMs = this.opts.deadlineMs;
    const t0 = Date.now();
    return new Promise((resolve) => {
      const answers: ServerAnswer[] = new Array(gates.length);
      const cancels: ((() => void) | undefined)[] = new Array(gates.length);
      let left = gates.length;
      const settle = (i: number, outcome: { text: string } | { error: string }) => {
        if (answers[i]) return;
        answers[i] = judge(gates[i]!, outcome, Date.now() - t0);
        if (--left > 0) return;
        clearTimeout(timer);
        resolve(answers);
      };
      const timer = setTimeout(() => {
        for (let i = 0; i < gates.length; i++) {
          if (answers[i]) continue;
          // The late answer is discarded; cancelling tells the slow gate to stop working on it.
          cancels[i]?.();
          settle(i, { error: `no answer within ${deadlineMs} ms (mcp.pre_tool_deadline)` });
        }
      }, deadlineMs);
      for (let i = 0; i < gates.length; i++) {
        const ds = gates[i]!;
        if ("error" in input) settle(i, input);
        else if (ds.state !== "ready") settle(i, { error: `not running${ds.lastError ? `: ${ds.lastError.slice(0, 300)}` : ""}` });
        else if (!ds.tools.some((t) => t.name === hook)) settle(i, { error: `it lists no ${hook} tool` });
        else
          cancels[i] = callHook(
            ds,
            hook,
            input,
            (r) => {
              const { text, hasText } = textOf(r);
              if (r.isError) settle(i, { error: `${hook} answered with an error: ${cut(text || "no text", 300)}` });
              else if (!hasText) settle(i, { error: `${hook} answered with no text block` });
              else settle(i, { text: cut(text, MAX_HOOK_TEXT_BYTES) });
            },
            (e) => settle(i, { error: (e as Error)?.message ?? String(e) }),
          );
      }
    });
  }
}

/** A gate's input, as sent: the object, and its JSON made once for every gate. */
interface GateInput {
  value: Record<string, unknown>;
  json: string;
}

/**
 * One hook call on the pass-through when the gate's server can take one (no SDK request
 * machinery: this runs on every tool call), else through its Client. Returns how to cancel it.
 */
function callHook(
  ds: Downstream,
  hook: string,
  input: GateInput,
  done: (r: CallToolResult) => void,
  failed: (e: unknown) => void,
): () => void {
  const raw = ds.rawCalls();
  const id = raw?.callWithArguments(hook, input.json, { done });
  if (id !== undefined) return () => raw!.cancel(id, "past mcp.pre_tool_deadline");
  const abort = new AbortController();
  ds.call(hook, input.value, { signal: abort.signal }).then(done, failed);
  return () => abort.abort();
}

/** What a gate is sent; arguments too large to send are an error for every gate (block fails closed). */
function gateInput(call: GatedCall): GateInput | { error: string } {
  const args = JSON.stringify(call.arguments ?? {}) ?? "null";
  const bytes = Buffer.byteLength(args, "utf8");
  if (bytes > MAX_GATED_ARGUMENT_BYTES)
    return { error: `the call's arguments (${bytes} bytes as JSON) are over the ${MAX_GATED_ARGUMENT_BYTES} bytes a gate is sent` };
  const value = {
    tool: call.tool,
    server: call.server,
    arguments: call.arguments ?? {},
    title: call.title ?? call.tool,
    kind: call.kind ?? "other",
  };
  // The same object as JSON, its arguments' JSON (already made for the size check) spliced in.
  const json = `{"tool":${JSON.stringify(value.tool)},"server":${JSON.stringify(value.server)},"arguments":${args},"title":${JSON.stringify(value.title)},"kind":${JSON.stringify(value.kind)}}`;
  return { value, json };
}

/** A gate input with more fields, in the object and in its JSON. */
function withFields(input: GateInput | { error: string }, more: Record<string, unknown>): GateInput | { error: string } {
  if ("error" in input) return input;
  return { value: { ...input.value, ...more }, json: `${input.json.slice(0, -1)},${JSON.stringify(more).slice(1)}` };
}

function cut(text: string, bytes: number): string {
  if (Buffer.byteLength(text, "utf8") <= bytes) return text;
  return `${utf8Prefix(text, bytes - 3)}…`;
}
