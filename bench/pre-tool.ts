/**
 * Gates on every tool call: a `tools/call` through the agent's MCP slot to a tool server's
 * `echo`, with 1 and with 5 `pre_tool: block` gates (test/fixtures/gate-server.mjs) that
 * answer `_PreToolUse` at once with "" (allow), against the same call with no gate, all in
 * the same run, through both ways the slot is served: `buzz-bridge mcp-proxy` over stdio, and
 * the daemon's MCP endpoint over Streamable HTTP (bench/mcp-http-server.mjs, as figure 12
 * serves it), each with the MCP SDK's client for that transport. Targets (bench/README.md),
 * per transport: 1 gate ≤ 1.5× no gate at the median, 5 gates ≤ 2×: the gates are asked
 * concurrently over their already-open sessions, nothing is spawned or listed per call.
 * Every slot is warmed up first and the timed calls of all six are interleaved.
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
import { SlotServer } from "./mcp-http.js";
import { runIfMain } from "./standalone.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI = join(ROOT, "dist", "cli.js");
const GATE = join(ROOT, "test", "fixtures", "gate-server.mjs");
const CALLS = Number(process.env.BENCH_PRE_TOOL_CALLS ?? 300);
/**
 * Calls before any is timed, on each slot. Every proxy and gate server is a fresh process
 * whose per-call path V8 has yet to optimize: with 20, a gate server still ran its SDK code
 * cold through most of the 300 timed calls (about 3× its warm CPU per call), and the five
 * gates' warm-up, not their per-call cost, was what the 5-gate figure measured.
 */
const WARMUP = 500;
/**
 * The timed calls come in rounds, each slot in turn (one further along each round), so the
 * machine's load falls on all six alike: 30 rounds of 10 calls, as short as ten rounds of
 * three slots were, where a load burst of a few seconds fell on one or two slots' blocks.
 */
const ROUNDS = 30;
const GATE_COUNTS = [0, 1, 5] as const;

export interface PreToolResult {
  /** Per-call ms through `mcp-proxy` (stdio), keyed by the number of gates (0 = none). */
  stdio: Record<string, number[]>;
  /** The same through the daemon's MCP endpoint (Streamable HTTP). */
  http: Record<string, number[]>;
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

/** The tool server (its `echo` unprefixed) and `gates` block gates that allow every call, by name. */
function servers(
  gates: number,
): Record<string, { command: string; args: string[]; env: Record<string, string>; prefix?: boolean; pre_tool?: "block" }> {
  const out: ReturnType<typeof servers> = {
    tools: { command: process.execPath, args: [GATE], env: { GATE_NO_STOP: "1", GATE_TOOLS: "echo" }, prefix: false },
  };
  for (let i = 0; i < gates; i++)
    out[`g${i}`] = {
      command: process.execPath,
      args: [GATE],
      env: { GATE_NO_STOP: "1", GATE_PRE_TOOL: "1", GATE_PRE_TOOL_OBJECT: "matches-nothing" },
      pre_tool: "block",
    };
  return out;
}

export async function benchPreTool(): Promise<PreToolResult> {
  const dir = mkdtempSync(join(tmpdir(), "bench-pre-tool-"));
  const clients: Client[] = [];
  const slot = SlotServer.start();
  const proxy = async (gates: number) => {
    const file = join(dir, `pre-tool-${gates}.yaml`);
    writeFileSync(file, stringify({ servers: servers(gates) }));
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
  // One process serves every HTTP session, as the daemon does; each session has its own servers.
  const http = async (gates: number) => {
    const client = await slot.session(
      Object.entries(servers(gates)).map(([name, s]) => ({ name, prefix: true, stop: "reprompt", on_error: "allow", ...s })),
    );
    clients.push(client);
    await client.listTools();
    return client;
  };
  try {
    const ways: Array<[keyof PreToolResult, string, Client]> = [];
    for (const n of GATE_COUNTS) ways.push(["stdio", String(n), await proxy(n)]);
    for (const n of GATE_COUNTS) ways.push(["http", String(n), await http(n)]);
    for (const [, , client] of ways) await timeCalls(client, 0, WARMUP);
    const result: PreToolResult = { stdio: {}, http: {} };
    for (const [t, n] of ways) result[t][n] = [];
    for (let r = 0; r < ROUNDS; r++) {
      for (let k = 0; k < ways.length; k++) {
        const [t, n, client] = ways[(k + r) % ways.length]!;
        result[t][n]!.push(...(await timeCalls(client, Math.ceil(CALLS / ROUNDS), 5)));
      }
    }
    return result;
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    slot.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, benchPreTool, (r) => {
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const [label, calls] of [
    ["stdio (mcp-proxy)", r.stdio],
    ["HTTP (the daemon's endpoint)", r.http],
  ] as const) {
    const none = med(calls["0"]!);
    console.log(`${label}: no gate`, none.toFixed(3), "ms");
    for (const n of ["1", "5"])
      console.log(`${label}: ${n} gate(s)`, med(calls[n]!).toFixed(3), "ms", `(${(med(calls[n]!) / none).toFixed(2)}×)`);
  }
});
