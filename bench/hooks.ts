/**
 * Hook fan-out: the merged `_Stop` through `buzz-bridge mcp-proxy` for 1, 5 and 10 gate
 * servers that each answer in 5 ms (`test/fixtures/gate-server.mjs`, GATE_DELAY_MS=5). The
 * figure is a ratio of the same run: N gates through the proxy against 1 gate through the
 * proxy, which a parallel fan-out keeps near 1× and a serial one takes to about N×; one gate
 * through the proxy is also set against one gate called directly (no proxy). With one gate
 * hung, the answer time against `hook_deadline` over at least 20 samples, the maximum never
 * past the deadline + 50 ms. Targets in bench/README.md. Build first; run alone:
 * `node --import tsx bench/hooks.ts`.
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
const CALLS = Number(process.env.BENCH_HOOK_CALLS ?? 100);
/** Samples with one gate hung: the target is on the maximum, so enough of them to mean something. */
const HUNG_CALLS = Math.max(20, Number(process.env.BENCH_HOOK_HUNG_CALLS ?? 20));
const DEADLINE_MS = 2000;
const GATE_MS = 5;

export interface HooksResult {
  gate_ms: number;
  deadline_ms: number;
  direct: number[];
  proxied: Record<string, number[]>;
  hung: number[];
}

async function connect(command: string, args: string[], env?: Record<string, string>): Promise<Client> {
  const client = new Client({ name: "bench-hooks", version: "0" });
  await client.connect(
    new StdioClientTransport({
      command,
      args,
      env: env ? { ...(process.env as Record<string, string>), ...env } : undefined,
      stderr: "ignore",
    }),
  );
  return client;
}

async function timeStop(client: Client, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n + 3; i++) {
    const t0 = performance.now();
    const r = await client.request({ method: "tools/call", params: { name: "_Stop", arguments: {} } }, CallToolResultSchema);
    if (r.isError) throw new Error(`hooks bench: _Stop answered isError: ${JSON.stringify(r.content).slice(0, 200)}`);
    if (i >= 3) out.push(performance.now() - t0);
  }
  return out;
}

export async function benchHooks(): Promise<HooksResult> {
  const dir = mkdtempSync(join(tmpdir(), "bench-hooks-"));
  const clients: Client[] = [];
  const proxy = async (gates: number, hung: boolean) => {
    const servers: Record<string, unknown> = {};
    for (let i = 0; i < gates; i++)
      servers[`g${i}`] = { command: process.execPath, args: [GATE], env: { GATE_DELAY_MS: String(GATE_MS), GATE_STOP_TEXT: "" } };
    if (hung) servers.hung = { command: process.execPath, args: [GATE], env: { GATE_HANG: "1" } };
    const file = join(dir, `hooks-${gates}-${hung ? "hung" : "live"}.yaml`);
    writeFileSync(file, stringify({ servers, hook_deadline: `${DEADLINE_MS / 1000}s` }));
    const c = await connect(process.execPath, [CLI, "mcp-proxy", "--manifest", file, "--log-level", "error"]);
    clients.push(c);
    await c.listTools();
    return c;
  };
  try {
    const direct = await connect(process.execPath, [GATE], { GATE_DELAY_MS: String(GATE_MS), GATE_STOP_TEXT: "" });
    clients.push(direct);
    const directSamples = await timeStop(direct, CALLS);
    const proxied: Record<string, number[]> = {};
    for (const n of [1, 5, 10]) proxied[String(n)] = await timeStop(await proxy(n, false), CALLS);
    const hung = await timeStop(await proxy(3, true), HUNG_CALLS);
    return { gate_ms: GATE_MS, deadline_ms: DEADLINE_MS, direct: directSamples, proxied, hung };
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    rmSync(dir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, benchHooks, (r) => {
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const one = med(r.proxied["1"]!);
  console.log("direct", med(r.direct).toFixed(2));
  for (const [n, xs] of Object.entries(r.proxied))
    console.log(`proxy ${n} gates`, med(xs).toFixed(2), `(${(med(xs) / one).toFixed(2)}× one gate through the proxy)`);
  const max = Math.max(...r.hung);
  console.log(
    `hung: median ${med(r.hung).toFixed(0)} ms, max ${max.toFixed(0)} ms over ${r.hung.length} samples; deadline ${r.deadline_ms} ms; target max <= ${r.deadline_ms + 50} ms: ${max <= r.deadline_ms + 50 ? "met" : "MISSED"}`,
  );
});
