/**
 * Agent start-up cost as a mention sees it: time from `acquire`
 * to the session being ready for `session/prompt`, and to the end of a one-line turn,
 * with a warm spare vs a cold spawn of the same agent (the demo agent, `dist/cli.js
 * demo-agent`, build first), alternating in the same run. The cold figure is the
 * baseline; the ratio is warm / cold. Run alone: `node --import tsx bench/agent.ts`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { AgentPool, type AgentPoolOptions } from "../src/agent/index.js";
import { runIfMain } from "./standalone.js";

const ROUNDS = 5;
const cli = fileURLToPath(new URL("../dist/cli.js", import.meta.url));

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
const round1 = (x: number) => Math.round(x * 10) / 10;

async function once(pool: AgentPool, scope: string): Promise<{ readyMs: number; turnMs: number }> {
  const t0 = performance.now();
  const s = await pool.acquire(scope, { channel: { id: "bench", name: "bench" }, mcpEnv: {} });
  const readyMs = performance.now() - t0;
  const r = await s.prompt([{ type: "text", text: "Author: bench\n```\nping #final-only\n```" }]);
  if (r.stopReason !== "end_turn") throw new Error(`bench turn ended with ${r.stopReason}`);
  const turnMs = performance.now() - t0;
  await pool.rotate(scope);
  return { readyMs, turnMs };
}

/**
 * A pool of the demo agent with the real proxy (no manifest: what every session starts,
 * minus downstream servers), generous limits and no spare; the bench parts vary the rest.
 */
export function demoPoolOptions(cwd: string): AgentPoolOptions {
  return {
    command: process.execPath,
    args: [cli, "demo-agent"],
    env: {},
    cwd,
    maxConcurrent: 2,
    idleTimeoutMs: 60_000,
    maxTurnMs: 120_000,
    idleCloseMs: 600_000,
    cancelGraceMs: 2_000,
    warmSpare: false,
    permissions: "allow",
    permissionTimeoutMs: 10_000,
    closeGraceMs: 1_000,
    proxy: { command: process.execPath, args: [cli, "mcp-proxy"] },
  };
}

export async function benchAgent(): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), "bench-agent-"));
  const base = demoPoolOptions(join(dir, "{channel}"));
  const warm = new AgentPool({ ...base, warmSpare: true });
  const cold = new AgentPool(base);
  try {
    warm.start();
    const w: Array<{ readyMs: number; turnMs: number }> = [];
    const c: Array<{ readyMs: number; turnMs: number }> = [];
    for (let i = 0; i < ROUNDS; i++) {
      // A mention arrives at steady state: the spare has had time to start.
      if (!(await warm.spareReady())) throw new Error("warm spare did not start");
      w.push(await once(warm, `w${i}`));
      c.push(await once(cold, `c${i}`));
    }
    const wr = median(w.map((x) => x.readyMs));
    const cr = median(c.map((x) => x.readyMs));
    const wt = median(w.map((x) => x.turnMs));
    const ct = median(c.map((x) => x.turnMs));
    return {
      agent_rounds: ROUNDS,
      agent_ready_warm_ms: round1(wr),
      agent_ready_cold_ms: round1(cr),
      agent_ready_warm_vs_cold: Math.round((wr / cr) * 1000) / 1000,
      agent_turn_warm_ms: round1(wt),
      agent_turn_cold_ms: round1(ct),
      agent_turn_warm_vs_cold: Math.round((wt / ct) * 1000) / 1000,
    };
  } finally {
    await Promise.all([warm.close(), cold.close()]);
    rmSync(dir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, benchAgent);
