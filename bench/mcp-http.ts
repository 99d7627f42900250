/**
 * The MCP slot over HTTP against the stdio proxy, same run (figure 12):
 *
 *   - tools/call latency: 2,000 sequential `echo` calls to server-everything, interleaved
 *     four ways: straight to the server (the baseline), through a process that only copies
 *     bytes (the floor), through `buzz-bridge mcp-proxy` (stdio, as an agent without MCP
 *     over HTTP gets it), and through the daemon's HTTP endpoint (bench/mcp-http-server.mjs:
 *     the daemon's aggregator and endpoint from dist/, in a process of their own), each with
 *     the MCP SDK's own client for that transport, as agents use them; and the same HTTP
 *     client against a process that answers every request at once over SSE, as the SDK's
 *     server does by default (the HTTP floor: what the client and the transport cost before
 *     any server does any work), the same answering with one JSON body (the floor of a JSON
 *     answer), and a process that hands each call to server-everything over a pipe and
 *     answers its result as one JSON body, with no checks of any kind (the forwarding floor:
 *     the least any HTTP slot with a real server behind it can cost).
 *   - memory per session: SESSIONS sessions each way, each with one MCP server (the gate
 *     fixture) and a client that has made calls. stdio: the proxies' own PSS (one process per
 *     session); HTTP: the PSS the serving process grows by, per session, after full GCs.
 *     The MCP servers themselves are the same processes either way and are not counted.
 *
 * Build first; run alone: `node --import tsx bench/mcp-http.ts`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { PROXY_NODE_FLAGS } from "../src/agent/session.js";
import { runIfMain } from "./standalone.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI = join(ROOT, "dist", "cli.js");
const SERVER = join(ROOT, "bench", "mcp-http-server.mjs");
const EVERYTHING = join(ROOT, "node_modules", ".bin", "mcp-server-everything");
const GATE = join(ROOT, "test", "fixtures", "gate-server.mjs");
const CALLS = Number(process.env.BENCH_PROXY_CALLS ?? 2000);
const SESSIONS = Number(process.env.BENCH_HTTP_SESSIONS ?? 8);
const WARMUP = 200;

const COPIER = `
const { spawn } = require("node:child_process");
const c = spawn(process.argv[1], process.argv.slice(2), { stdio: ["pipe", "pipe", "inherit"] });
process.stdin.pipe(c.stdin); c.stdout.pipe(process.stdout);
c.on("exit", (code) => process.exit(code ?? 0));
`;

/**
 * The HTTP floors, one process each, printing its port: every MCP request over Streamable
 * HTTP is answered (initialize, then each tools/call with the echo's text) and nothing else
 * is done. `sse` and `json` answer at once, as an SSE stream or as one JSON body: what the
 * agent's HTTP client and the transport cost before any server does any work. `forward`
 * hands each tools/call to server-everything (argv[1]) over its stdin and answers with its
 * result as one JSON body: the least a slot with a real server behind it can cost.
 */
const HTTP_FLOOR = `
const { createServer } = require("node:http");
const kind = process.argv[1];
const answer = (res, id, result) => {
  const msg = JSON.stringify({ jsonrpc: "2.0", id, result });
  if (kind === "sse") {
    res.writeHead(200, { "content-type": "text/event-stream", "mcp-session-id": "floor" });
    res.end("event: message\\ndata: " + msg + "\\n\\n");
  } else {
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(msg), "mcp-session-id": "floor" });
    res.end(msg);
  }
};
const waiting = new Map();
let down;
if (kind === "forward") {
  down = require("node:child_process").spawn(process.argv[2], ["stdio"], { stdio: ["pipe", "pipe", "ignore"] });
  require("node:readline").createInterface({ input: down.stdout }).on("line", (line) => {
    const m = JSON.parse(line);
    waiting.get(m.id)?.(m.result);
    waiting.delete(m.id);
  });
  const send = (m) => down.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\\n");
  waiting.set(0, () => send({ method: "notifications/initialized" }));
  send({ id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "floor", version: "0" } } });
}
let seq = 0;
const s = createServer((req, res) => {
  if (req.method !== "POST") { res.writeHead(405).end(); return; }
  let b = ""; req.on("data", (c) => (b += c)); req.on("end", () => {
    const m = JSON.parse(b);
    if (m.id === undefined) { res.writeHead(202).end(); return; }
    if (m.method === "initialize")
      return answer(res, m.id, { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "floor", version: "0" } });
    if (!down) return answer(res, m.id, { content: [{ type: "text", text: "Echo: " + m.params.arguments.message }] });
    const id = ++seq;
    waiting.set(id, (result) => answer(res, m.id, result));
    down.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: m.params }) + "\\n");
  });
});
s.on("connection", (c) => c.setNoDelay(true));
s.listen(0, "127.0.0.1", () => console.log(s.address().port));
`;

const r3 = (x: number) => Math.round(x * 1000) / 1000;

function pssKib(pid: number): number {
  return Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1] ?? Number.NaN);
}

/** The HTTP slot's process: one JSON command per line (bench/mcp-http-server.mjs). Figure 2g serves its HTTP sessions from it too. */
export class SlotServer {
  private readonly lines: AsyncIterator<string>;
  constructor(readonly child: ChildProcess) {
    this.lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  }
  static start(): SlotServer {
    return new SlotServer(spawn(process.execPath, ["--expose-gc", SERVER], { stdio: ["pipe", "pipe", "inherit"] }));
  }
  async ask<T>(cmd: unknown): Promise<T> {
    this.child.stdin!.write(`${JSON.stringify(cmd)}\n`);
    const next = await this.lines.next();
    if (next.done) throw new Error("the HTTP slot server exited");
    return JSON.parse(next.value) as T;
  }
  async session(servers: unknown[]): Promise<Client> {
    const { url, headers } = await this.ask<{ url: string; headers: Record<string, string> }>({
      open: { servers, hook_deadline: 2000, list_timeout: 15_000 },
    });
    const client = new Client({ name: "bench", version: "0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
    return client;
  }
  stop(): void {
    this.child.kill();
  }
}

async function stdioClient(command: string, args: string[]): Promise<{ client: Client; pid: number }> {
  const transport = new StdioClientTransport({ command, args, stderr: "ignore" });
  const client = new Client({ name: "bench", version: "0" });
  await client.connect(transport);
  return { client, pid: transport.pid! };
}

function proxyArgs(dir: string, servers: Record<string, unknown>): string[] {
  const file = join(dir, `m-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, stringify({ servers }));
  return [...PROXY_NODE_FLAGS, CLI, "mcp-proxy", "--manifest", file, "--log-level", "error"];
}

async function timeCalls(client: Client, name: string, n: number, warm = WARMUP): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < warm + n; i++) {
    const t0 = performance.now();
    await client.request({ method: "tools/call", params: { name, arguments: { message: "hello benchmark" } } }, CallToolResultSchema);
    if (i >= warm) out.push(performance.now() - t0);
  }
  return out;
}

const gate = { command: process.execPath, args: [GATE], env: { GATE_TOOLS: "shell", GATE_NO_STOP: "1" } };
const shell = (c: Client) =>
  c.request({ method: "tools/call", params: { name: "dev_shell", arguments: { text: "x" } } }, CallToolResultSchema);

export interface McpHttpBench {
  calls: number;
  direct_ms: number[];
  copier_ms: number[];
  proxy_ms: number[];
  http_ms: number[];
  /** The same HTTP client against a server that answers at once over SSE (the HTTP floor). */
  http_floor_ms: number[];
  /** The same, answered as one JSON body. */
  http_floor_json_ms: number[];
  /** The same client against a server that forwards each call to server-everything, with no checks (the forwarding floor). */
  http_forward_ms: number[];
  sessions: number;
  /** PSS of each session's mcp-proxy process. */
  stdio_pss_kib: number[];
  /** The HTTP slot process's PSS with one warm session, and with SESSIONS more. */
  http_pss_base_kib: number;
  http_pss_after_kib: number;
}

export async function benchMcpHttp(): Promise<McpHttpBench> {
  const dir = mkdtempSync(join(tmpdir(), "bench-mcp-http-"));
  const slot = SlotServer.start();
  const closers: Array<() => Promise<unknown>> = [];
  try {
    // Latency, interleaved so drift on a shared machine hits all four alike.
    const direct = (await stdioClient(EVERYTHING, ["stdio"])).client;
    const copier = (await stdioClient(process.execPath, ["-e", COPIER, EVERYTHING, "stdio"])).client;
    const proxied = (await stdioClient(process.execPath, proxyArgs(dir, { everything: { command: EVERYTHING, args: ["stdio"] } }))).client;
    const http = await slot.session([
      { name: "everything", command: EVERYTHING, args: ["stdio"], env: {}, prefix: true, stop: "reprompt", on_error: "allow" },
    ]);
    const floorClient = async (kind: "sse" | "json" | "forward"): Promise<Client> => {
      const proc = spawn(process.execPath, ["-e", HTTP_FLOOR, kind, EVERYTHING], { stdio: ["ignore", "pipe", "inherit"] });
      closers.push(async () => void proc.kill());
      const port = Number((await createInterface({ input: proc.stdout! })[Symbol.asyncIterator]().next()).value);
      const client = new Client({ name: "bench", version: "0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
      closers.push(() => client.close());
      return client;
    };
    const floor = await floorClient("sse");
    const floorJson = await floorClient("json");
    const forward = await floorClient("forward");
    closers.push(
      () => direct.close(),
      () => copier.close(),
      () => proxied.close(),
      () => http.close(),
    );
    await proxied.listTools();
    await http.listTools();
    const ways: Array<[Client, string, number[]]> = [
      [direct, "echo", []],
      [copier, "echo", []],
      [proxied, "everything_echo", []],
      [http, "everything_echo", []],
      [floor, "echo", []],
      [floorJson, "echo", []],
      [forward, "echo", []],
    ];
    const [d, c, p, h, f, fj, fw] = ways.map((w) => w[2]) as [number[], number[], number[], number[], number[], number[], number[]];
    // Each round starts one further along, so no way always follows the same other one.
    const rounds = 8;
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < ways.length; k++) {
        const [client, tool, out] = ways[(k + r) % ways.length]!;
        out.push(...(await timeCalls(client, tool, CALLS / rounds, WARMUP / 4)));
      }
    }

    // Memory per session: stdio proxies' own PSS; the HTTP process's growth per session.
    const stdioPss: number[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const { client, pid } = await stdioClient(process.execPath, proxyArgs(dir, { dev: gate }));
      closers.push(() => client.close());
      for (let k = 0; k < 20; k++) await shell(client);
      stdioPss.push(pid);
    }
    const stdioPssKib = stdioPss.map(pssKib);
    const warm = await slot.session([{ name: "dev", ...gate, prefix: true, stop: "reprompt", on_error: "allow" }]);
    closers.push(() => warm.close());
    for (let k = 0; k < 20; k++) await shell(warm);
    const base = (await slot.ask<{ pss_kib: number }>({ pss: true })).pss_kib;
    for (let i = 0; i < SESSIONS; i++) {
      const client = await slot.session([{ name: "dev", ...gate, prefix: true, stop: "reprompt", on_error: "allow" }]);
      closers.push(() => client.close());
      for (let k = 0; k < 20; k++) await shell(client);
    }
    const after = (await slot.ask<{ pss_kib: number }>({ pss: true })).pss_kib;
    return {
      calls: CALLS,
      direct_ms: d.map(r3),
      copier_ms: c.map(r3),
      proxy_ms: p.map(r3),
      http_ms: h.map(r3),
      http_floor_ms: f.map(r3),
      http_floor_json_ms: fj.map(r3),
      http_forward_ms: fw.map(r3),
      sessions: SESSIONS,
      stdio_pss_kib: stdioPssKib,
      http_pss_base_kib: base,
      http_pss_after_kib: after,
    };
  } finally {
    for (const close of closers) await close().catch(() => undefined);
    slot.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, benchMcpHttp, (r) => {
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const perHttp = (r.http_pss_after_kib - r.http_pss_base_kib) / r.sessions / 1024;
  const perStdio = r.stdio_pss_kib.reduce((a, b) => a + b, 0) / r.stdio_pss_kib.length / 1024;
  console.log(
    `tools/call median: direct ${med(r.direct_ms)} ms, copier ${med(r.copier_ms)} ms, stdio proxy ${med(r.proxy_ms)} ms, HTTP ${med(r.http_ms)} ms, HTTP floor ${med(r.http_floor_ms)} ms (JSON ${med(r.http_floor_json_ms)} ms, forwarding ${med(r.http_forward_ms)} ms)`,
  );
  console.log(`per session PSS: stdio proxy ${perStdio.toFixed(1)} MiB, HTTP ${perHttp.toFixed(2)} MiB`);
});
