/**
 * Gates on every tool call: a `tools/call` through `buzz-bridge mcp-proxy` to a tool server's
 * `echo`, with 1 and with 5 `pre_tool: block` gates (test/fixtures/gate-server.mjs) that
 * answer `_PreToolUse` at once with "" (allow), against the same call with no gate, all in
 * the same run. Targets (bench/README.md): 1 gate ≤ 1.5× no gate at the median, 5 gates ≤ 2×:
 * the gates are asked concurrently over their already-open sessions, nothing is spawned or
 * listed per call. Each proxy is warmed up first and the timed calls are interleaved.
 * Build first; run alone: `node --import tsx bench/pre-tool.ts`.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { runIfMain } from "./standalone.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI = join(ROOT, "dist", "cli.js");
const GATE = join(ROOT, "test", "fixtures", "gate-server.mjs");
const CALLS = Number(process.env.BENCH_PRE_TOOL_CALLS ?? 300);
/**
 * Calls before any is timed, on each proxy. Every proxy and gate server is a fresh process
 * whose per-call path V8 has yet to optimize: with 20, a gate server still ran its SDK code
 * cold through most of the 300 timed calls (about 3× its warm CPU per call), and the five
 * gates' warm-up, not their per-call cost, was what the 5-gate figure measured.
 */
const WARMUP = 500;
/** The timed calls come in rounds, each proxy in turn (one further along each round), so the machine's load falls on all three alike. */
const ROUNDS = 10;

export interface PreToolResult {
  /** Per-call ms, keyed by the number of gates (0 = none). */
  calls: Record<string, number[]>;
}

async function timeCalls(client: Client, n: number, warm: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n + warm; i++) {
    const t0 = performance.now();
    const r = await client.request({ method: "tools/call", params: { name: "echo", arguments: { text: "hi" } } }, CallToolResultSchema);
    if (r.isError) throw new Error(`pre-tool bench: echo answered isError: ${JSON.stringify(r.content).slice(0, 200)}`);
    if (i >= warm) out.push(performance.now() - t0);
  }
  return out;
}

export async function benchPreTool(): Promise<PreToolResult> {
  const dir = mkdtempSync(join(tmpdir(), "bench-pre-tool-"));
  const clients: Client[] = [];
  const proxy = async (gates: number) => {
    const servers: Record<string, unknown> = {
      tools: { command: process.execPath, args: [GATE], env: { GATE_NO_STOP: "1", GATE_TOOLS: "echo" }, prefix: false },
    };
    for (let i = 0; i < gates; i++)
      servers[`g${i}`] = {
        command: process.execPath,
        args: [GATE],
        env: { GATE_NO_STOP: "1", GATE_PRE_TOOL: "1", GATE_PRE_TOOL_OBJECT: "matches-nothing" },
        pre_tool: "block",
      };
    const file = join(dir, `pre-tool-${gates}.yaml`);
    writeFileSync(file, stringify({ servers }));
    const client = new Client({ name: "bench-pre-tool", version: "0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, "mcp-proxy", "--manifest", file, "--log-level", "error"],
        stderr: "ignore",
      }),
    );
    clients.push(client);
    await client.listTools();
    return client;
  };
  try {
    const ways: Array<[string, Client]> = [];
    for (const n of [0, 1, 5]) ways.push([String(n), await proxy(n)]);
    for (const [, client] of ways) await timeCalls(client, 0, WARMUP);
    const calls: Record<string, number[]> = Object.fromEntries(ways.map(([n]) => [n, []]));
    for (let r = 0; r < ROUNDS; r++) {
      for (let k = 0; k < ways.length; k++) {
        const [n, client] = ways[(k + r) % ways.length]!;
        calls[n]!.push(...(await timeCalls(client, Math.ceil(CALLS / ROUNDS), 5)));
      }
    }
    return { calls };
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    rmSync(dir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, benchPreTool, (r) => {
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const none = med(r.calls["0"]!);
  console.log("no gate", none.toFixed(3), "ms");
  for (const n of ["1", "5"]) console.log(`${n} gate(s)`, med(r.calls[n]!).toFixed(3), "ms", `(${(med(r.calls[n]!) / none).toFixed(2)}×)`);
});
