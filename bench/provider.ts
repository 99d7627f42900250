/**
 * Figure 16: a refused key, as the thread sees it. One daemon, one real agent (Claude Code
 * through the claude preset, offline) against a model stand-in on 127.0.0.1 that either
 * refuses the key (401, Anthropic's own error body) or answers: mention → the thread's
 * notice with the key refused, against mention → the reply with the key working, each a new
 * thread, alternating. Target: the notice ≤ 2× the reply (a refused key is said at once, not
 * after the agent's own retries and the bridge's).
 * Run alone: `node --import tsx bench/provider.ts` (build first: the daemon is dist/cli.js).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { readJsonBody, readRequest, wireOf, writeAnswer } from "../src/app/doctor/model-wire.js";
import { KIND } from "../src/nostr/kinds.js";
import { REPO, World } from "../kit/world.js";
import { waitFor } from "../kit/wait.js";
import { runIfMain } from "./standalone.js";

const SAMPLES = Number(process.env.BENCH_PROVIDER_SAMPLES ?? 3);

export interface ProviderBench {
  /** mention → the notice that the key was refused, ms. */
  refused: number[];
  /** mention → the reply, the key working, ms. */
  working: number[];
}

export async function benchProvider(): Promise<ProviderBench> {
  let refuse = false;
  let n = 0;
  const server = createServer((req, res) => {
    const route = wireOf(req.method, req.url);
    void readJsonBody(req).then(
      (body) => {
        if (refuse) {
          res.writeHead(401, { "content-type": "application/json" });
          res.end(JSON.stringify({ type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } }));
          return;
        }
        if (!route) {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ input_tokens: 1 }));
          return;
        }
        writeAnswer(res, readRequest(route, body), { text: "The answer, with a working key." }, `bench_${++n}`);
      },
      () => res.writeHead(400).end(),
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const w = await World.create({ channelName: "provider-bench" });
  try {
    await w.startDaemon(
      {
        agent: {
          command: undefined,
          args: undefined,
          preset: "claude",
          provider: { base_url: url, model: "claude-bench-model" },
          env: { ANTHROPIC_API_KEY: "bench-key" },
        },
        defaults: { reply_fallback: "final_text" },
      },
      { env: { PATH: `${join(REPO, "node_modules", ".bin")}:${process.env.PATH ?? ""}` } },
    );
    const first = async (ev: Event): Promise<number> => {
      await waitFor(async () => (await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] })).length > 0, {
        timeoutMs: 600_000,
        intervalMs: 20,
        what: "the agent's first message in the thread",
      });
      return performance.now();
    };
    const result: ProviderBench = { refused: [], working: [] };
    // One untimed turn first: the agent's first start is neither case's cost.
    refuse = false;
    await first(await w.owner.post("@agent warm up"));
    for (let i = 0; i < SAMPLES; i++) {
      for (const r of [true, false]) {
        refuse = r;
        const t0 = performance.now();
        const ev = await w.owner.post(`@agent question ${i} (${r ? "refused" : "working"} key)`);
        (r ? result.refused : result.working).push((await first(ev)) - t0);
      }
    }
    return result;
  } finally {
    await w.close();
    server.closeAllConnections();
    server.close();
  }
}

runIfMain(import.meta.url, benchProvider);
