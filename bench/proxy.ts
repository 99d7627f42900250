/**
 * Proxy overhead: median and p99 latency of 2,000 sequential
 * `tools/call echo` to server-everything, measured in the same run three ways:
 * straight to the server (the baseline), through a process that only copies bytes both
 * ways (the floor for anything in between), and through `buzz-bridge mcp-proxy`.
 * Plus merged `_Stop` latency with 1, 5 and 10 gate servers, and with one hung gate
 * (bounded by hook_deadline). Build first; run alone: `node --import tsx bench/proxy.ts`.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { PROXY_NODE_FLAGS } from "../src/agent/session.js";
import { runIfMain } from "./standalone.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI = join(ROOT, "dist", "cli.js");
const EVERYTHING = join(ROOT, "node_modules", ".bin", "mcp-server-everything");
const GATE = join(ROOT, "test", "fixtures", "gate-server.mjs");
const CALLS = Number(process.env.BENCH_PROXY_CALLS ?? 2000);
const WARMUP = 200;

/** The byte copier: spawns the server and pipes stdio both ways, nothing else. */
const COPIER = `
const { spawn } = require("node:child_process");
const c = spawn(process.argv[1], process.argv.slice(2), { stdio: ["pipe", "pipe", "inherit"] });
process.stdin.pipe(c.stdin); c.stdout.pipe(process.stdout);
c.on("exit", (code) => process.exit(code ?? 0));
`;

interface Stats {
  median_ms: number;
  p99_ms: number;
}

function stats(samples: number[]): Stats {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return { median_ms: round(at(0.5)), p99_ms: round(at(0.99)) };
}
const round = (x: number) => Math.round(x * 1000) / 1000;

async function connect(command: string, args: string[]): Promise<Client> {
  const client = new Client({ name: "bench", version: "0" });
  await client.connect(new StdioClientTransport({ command, args, stderr: "ignore" }));
  return client;
}

async function timeCalls(client: Client, name: string, args: Record<string, unknown>, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < WARMUP + n; i++) {
    const t0 = performance.now();
    await client.request({ method: "tools/call", params: { name, arguments: args } }, CallToolResultSchema);
    if (i >= WARMUP) out.push(performance.now() - t0);
  }
  return out;
}

function manifestFile(dir: string, servers: Record<string, unknown>, hookDeadline = "2s"): string {
  const file = join(dir, `m-${Object.keys(servers).length}-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, stringify({ servers, hook_deadline: hookDeadline }));
  return file;
}

async function hookLatency(dir: string, gates: number, hung: boolean, calls: number): Promise<Stats> {
  const servers: Record<string, unknown> = {};
  for (let i = 0; i < gates; i++)
    servers[`g${i}`] = { command: process.execPath, args: [GATE], env: { GATE_STOP_TEXT: i === 0 ? "objection" : "" } };
  if (hung) servers.hung = { command: process.execPath, args: [GATE], env: { GATE_HANG: "1" } };
  const client = await connect(process.execPath, [
    ...PROXY_NODE_FLAGS,
    CLI,
    "mcp-proxy",
    "--manifest",
    manifestFile(dir, servers),
    "--log-level",
    "error",
  ]);
  try {
    await client.listTools();
    const samples: number[] = [];
    for (let i = 0; i < calls + 2; i++) {
      const t0 = performance.now();
      await client.request({ method: "tools/call", params: { name: "_Stop", arguments: {} } }, CallToolResultSchema);
      if (i >= 2) samples.push(performance.now() - t0);
    }
    return stats(samples);
  } finally {
    await client.close();
  }
}

export async function benchProxy(): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), "bench-proxy-"));
  try {
    const direct = await connect(EVERYTHING, ["stdio"]);
    const copier = await connect(process.execPath, ["-e", COPIER, EVERYTHING, "stdio"]);
    const proxied = await connect(process.execPath, [
      ...PROXY_NODE_FLAGS,
      CLI,
      "mcp-proxy",
      "--manifest",
      manifestFile(dir, { everything: { command: EVERYTHING, args: ["stdio"] } }),
      "--log-level",
      "error",
    ]);
    await proxied.listTools();
    const msg = { message: "hello benchmark" };
    // Interleaved rounds so drift on a shared machine hits all three alike.
    const d: number[] = [];
    const c: number[] = [];
    const p: number[] = [];
    const rounds = 4;
    for (let r = 0; r < rounds; r++) {
      d.push(...(await timeCalls(direct, "echo", msg, CALLS / rounds)));
      c.push(...(await timeCalls(copier, "echo", msg, CALLS / rounds)));
      p.push(...(await timeCalls(proxied, "everything_echo", msg, CALLS / rounds)));
    }
    await Promise.all([direct.close(), copier.close(), proxied.close()]);
    const sd = stats(d);
    const sc = stats(c);
    const sp = stats(p);
    const h1 = await hookLatency(dir, 1, false, 50);
    const h5 = await hookLatency(dir, 5, false, 50);
    const h10 = await hookLatency(dir, 10, false, 50);
    const hHung = await hookLatency(dir, 3, true, 3);
    return {
      calls: CALLS,
      direct_median_ms: sd.median_ms,
      direct_p99_ms: sd.p99_ms,
      copier_median_ms: sc.median_ms,
      copier_p99_ms: sc.p99_ms,
      proxy_median_ms: sp.median_ms,
      proxy_p99_ms: sp.p99_ms,
      copier_vs_direct_median: round(sc.median_ms / sd.median_ms),
      proxy_vs_direct_median: round(sp.median_ms / sd.median_ms),
      proxy_vs_direct_p99: round(sp.p99_ms / sd.p99_ms),
      stop_1_gate_median_ms: h1.median_ms,
      stop_5_gates_median_ms: h5.median_ms,
      stop_10_gates_median_ms: h10.median_ms,
      stop_10_vs_1_gate_median: round(h10.median_ms / h1.median_ms),
      stop_hung_gate_median_ms: hHung.median_ms,
      hook_deadline_ms: 2000,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, benchProxy);
