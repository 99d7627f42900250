/**
 * What the agent sandbox costs at start-up: a cold spawn of the demo agent (`dist/cli.js
 * demo-agent`, build first) from `acquire` to the session being ready for
 * `session/prompt`, in a bubblewrap sandbox vs unsandboxed, alternating in the same run.
 * The unsandboxed spawn is the baseline; the ratio is sandboxed / unsandboxed. (With the
 * warm spare the sandbox is set up before the mention: see bench/mention.ts, figure 4s.)
 * Run alone: `node --import tsx bench/sandbox.ts`.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { AgentPool, AgentSandbox, probeBubblewrap, type AgentPoolOptions } from "../src/agent/index.js";
import { runIfMain } from "./standalone.js";
import { demoPoolOptions } from "./agent.js";

const ROUNDS = Number(process.env.BENCH_SANDBOX_ROUNDS ?? 8);
const cli = fileURLToPath(new URL("../dist/cli.js", import.meta.url));

export interface SandboxBench {
  rounds: number;
  sandboxed: number[];
  plain: number[];
}

async function readyMs(pool: AgentPool, scope: string): Promise<number> {
  const t0 = performance.now();
  await pool.acquire(scope, { channel: { id: "bench", name: "bench" }, mcpEnv: {} });
  const ms = performance.now() - t0;
  await pool.rotate(scope);
  return ms;
}

export async function benchSandbox(): Promise<SandboxBench> {
  const probe = probeBubblewrap();
  if (!probe.ok) throw new Error(`bubblewrap cannot run here: ${probe.reason}`);
  // Not under the temp dir: the sandbox's private /tmp would make its hiding free.
  const dir = mkdtempSync(join("/var/tmp", "bench-sandbox-"));
  const state = join(dir, "state");
  mkdirSync(state);
  const base: AgentPoolOptions = { ...demoPoolOptions(join(dir, "work", "{channel}")), linkRoot: join(state, "link") };
  const sandbox = new AgentSandbox({
    mode: "bubblewrap",
    network: "on",
    binds: [],
    hide: [state, join(dir, "work")],
    stateDir: state,
    install: dirname(dirname(cli)),
  });
  const sandboxed = new AgentPool({ ...base, sandbox });
  const plain = new AgentPool(base);
  sandboxed.start();
  plain.start();
  try {
    const s: number[] = [];
    const p: number[] = [];
    for (let i = 0; i < ROUNDS + 1; i++) {
      // Alternate, so both see the same machine load; the first round warms the file cache.
      const a = await readyMs(sandboxed, `s${i}`);
      const b = await readyMs(plain, `p${i}`);
      if (i > 0) {
        s.push(a);
        p.push(b);
      }
    }
    return { rounds: ROUNDS, sandboxed: s, plain: p };
  } finally {
    await Promise.all([sandboxed.close(), plain.close()]);
    rmSync(dir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, benchSandbox);
