/**
 * Hook fan-out and merge (docs/architecture.md §4). A hook is a tool whose bare
 * name starts with `_`. One upstream hook call reaches every server that has the hook
 * exactly once, in parallel, under one deadline; late answers are discarded. The merged
 * text is `[server] text` per objecting server in config order, blank-line separated,
 * at most 16 KiB with a fair share each, `""` when nobody objects, never isError.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { HookFanout, HookServerResult } from "../contract/hooks.js";
import type { Logger } from "../base/log.js";
import { utf8Prefix } from "../base/utf8.js";
import type { Downstream } from "./downstream.js";

/** buzz-agent caps each hook result at 16 KiB. */
export const MAX_HOOK_TEXT_BYTES = 16 * 1024;
/** Consecutive deadline misses after which a server is restarted (buzz-agent kills on the second). */
const HOOK_MISSES_BEFORE_RESTART = 2;

function resultText(r: CallToolResult): string {
  const parts: string[] = [];
  for (const c of r.content ?? []) if (c.type === "text") parts.push(c.text);
  return parts.join("\n").trim();
}

const SEP = "\n\n";

/** Cuts a string to at most `bytes` UTF-8 bytes, whole characters and an ellipsis. */
function cutBytes(text: string, bytes: number): string {
  if (Buffer.byteLength(text, "utf8") <= bytes) return text;
  const marker = "…";
  return utf8Prefix(text, bytes - Buffer.byteLength(marker)) + marker;
}

/**
 * Merges objections in the given (config) order. When they do not fit, the budget is
 * water-filled: short answers keep everything, long ones share what is left equally.
 */
export function mergeHookTexts(parts: { name: string; text: string }[], maxBytes = MAX_HOOK_TEXT_BYTES): string {
  const items = parts.filter((p) => p.text.trim() !== "").map((p) => `[${p.name}] ${p.text.trim()}`);
  if (items.length === 0) return "";
  const sizes = items.map((s) => Buffer.byteLength(s, "utf8"));
  let budget = maxBytes - Buffer.byteLength(SEP) * (items.length - 1);
  if (sizes.reduce((a, b) => a + b, 0) <= budget) return items.join(SEP);
  const caps = new Array<number>(items.length).fill(0);
  const order = sizes.map((s, i) => [s, i] as const).sort((a, b) => a[0] - b[0]);
  let left = items.length;
  for (const [size, i] of order) {
    const share = Math.floor(budget / left);
    caps[i] = Math.min(size, share);
    budget -= caps[i]!;
    left--;
  }
  return items.map((s, i) => cutBytes(s, caps[i]!)).join(SEP);
}

/**
 * Calls `hook` once on each target, all at once, and waits at most `deadlineMs`.
 * Never throws: every failure is a per-server result. A target that is not running when
 * the hook is due (or has not come up by the deadline) is `down` and counts as its
 * `on_error`: the proxy adds a `stop: wait` gate that failed to start to the targets (see
 * AggregatingProxy.hookTargets), so a human approval that is down never approves.
 */
export async function runHookFanout(
  hook: string,
  targets: Downstream[],
  opts: { deadlineMs: number; logger: Logger; args?: Record<string, unknown> },
): Promise<HookFanout> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), opts.deadlineMs);
  });

  const one = async (ds: Downstream): Promise<HookServerResult> => {
    const t0 = Date.now();
    const onError = (error: string, timedOut: boolean, down = false): HookServerResult => {
      const verdict = ds.cfg.on_error;
      const text = verdict === "object" ? `${hook} could not be checked (${error}); this server is set to object on errors` : "";
      return { name: ds.name, ms: Date.now() - t0, verdict, timed_out: timedOut, error, text, ...(down ? { down } : {}) };
    };
    const notRunning = () => onError(`not running${ds.lastError ? `: ${ds.lastError.slice(0, 300)}` : ""}`, false, true);
    if (ds.state === "down" || ds.state === "stopped") return notRunning();
    const abort = new AbortController();
    const attempt = (async (): Promise<CallToolResult> => {
      if (ds.state === "starting") await ds.whenReady();
      // Up now, but without this hook: a server that is not a gate has nothing to object to.
      if (!ds.tools.some((t) => t.name === hook)) return { content: [] };
      return ds.call(hook, opts.args ?? {}, { signal: abort.signal });
    })();
    const outcome = await Promise.race([
      attempt.then(
        (r) => ({ r }),
        (e: unknown) => ({ e }),
      ),
      deadline,
    ]);
    if (outcome === "timeout") {
      // The late answer is discarded; cancelling tells the slow server to stop working on it.
      abort.abort();
      // Still starting (or restarting): not running when the hook was due, not a missed deadline.
      if (ds.state !== "ready") return notRunning();
      ds.hookMisses++;
      if (ds.hookMisses >= HOOK_MISSES_BEFORE_RESTART) {
        ds.hookMisses = 0;
        void ds.restart(`missed the ${hook} deadline ${HOOK_MISSES_BEFORE_RESTART} times in a row`);
      }
      return onError(`no answer within ${opts.deadlineMs} ms`, true);
    }
    ds.hookMisses = 0;
    if ("e" in outcome) return onError((outcome.e as Error)?.message ?? String(outcome.e), false);
    const text = resultText(outcome.r);
    if (outcome.r.isError) return onError(text || "isError without text", false);
    return { name: ds.name, ms: Date.now() - t0, verdict: text === "" ? "allow" : "object", timed_out: false, text };
  };

  const servers = await Promise.all(targets.map(one));
  clearTimeout(timer);
  const text = mergeHookTexts(servers);
  const result: HookFanout = { text, verdict: text === "" ? "allow" : "object", ms: Date.now() - started, servers };
  opts.logger.info({
    evt: "hook",
    hook,
    ms: result.ms,
    verdict: result.verdict,
    servers: servers.map(({ name, ms, verdict, timed_out, error, down }) => ({
      name,
      ms,
      verdict,
      timed_out,
      ...(error ? { error } : {}),
      ...(down ? { down } : {}),
    })),
  });
  return result;
}
