// The daemon's HTTP MCP slot on its own, for bench/mcp-http.ts: a process that serves
// sessions the way `buzz-bridge run` does (an Aggregator behind an HttpEndpoint per
// session, from dist/), so its memory and latency are measured apart from the bench's
// own. One JSON command per stdin line, one JSON answer per stdout line:
//   {"open": <manifest>}  → {"url", "headers"}   a session (its servers start now)
//   {"pss": true}         → {"pss_kib"}          after two full GCs (run with --expose-gc)
// The endpoints' request rate limit is lifted: the bench times calls back to back.
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { silentLogger } from "../dist/base/log.js";
import { Aggregator } from "../dist/proxy/aggregator.js";
import { HttpEndpoint } from "../dist/proxy/http-endpoint.js";

const pss = () => Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync("/proc/self/smaps_rollup", "utf8"))?.[1] ?? Number.NaN);
const say = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
let n = 0;
for await (const line of createInterface({ input: process.stdin })) {
  const cmd = JSON.parse(line);
  if (cmd.open) {
    const logger = silentLogger();
    const aggregator = new Aggregator({ manifest: cmd.open, logger });
    aggregator.start();
    const endpoint = await HttpEndpoint.open({ logger, limits: { rate: { frames: 1e9, windowMs: 1000 } } });
    say({ url: endpoint.url, headers: endpoint.bind({ key: `bench-${++n}`, aggregator }) });
  } else if (cmd.pss) {
    globalThis.gc?.();
    globalThis.gc?.();
    say({ pss_kib: pss() });
  }
}
process.exit(0);
