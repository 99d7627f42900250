/**
 * A daemon that is SIGKILLed cannot stop its agents; an unsandboxed one that ignores the end
 * of its stdin keeps running (a sandboxed one dies with its parent). The next start finds them from the process groups recorded in its state
 * and stops them before starting its own.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO, World } from "../kit/world.js";
import { sleep, waitFor } from "../kit/wait.js";

let w: World;
/** Agent groups this test left behind if it failed half-way: stopped so no process outlives the test. */
let pids: number[] = [];
after(async () => {
  for (const pid of pids) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // already stopped (the pass case)
    }
  }
  await w?.close();
});

/** Running (a zombie waiting to be reaped has stopped already). */
const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
};

test("agents left running by a SIGKILLed daemon are stopped by the next start, and only those", { timeout: 60_000 }, async () => {
  w = await World.create();
  // Unsandboxed: a bubblewrap sandbox dies with its parent, so only a plain agent can outlive the daemon.
  const d1 = await w.startDaemon({
    agent: { command: process.execPath, args: [join(REPO, "test", "fixtures", "agent-stubborn.mjs")], sandbox: "off" },
    log: { level: "info" },
  });
  const ev = await w.owner.post("@agent hello");
  await w.waitReply(ev);
  pids = [...new Set(d1.logs.filter((l) => l.evt === "agent.initialized").map((l) => Number(l.agent_pid)))];
  assert.ok(pids.length >= 1, "an agent served the mention");

  d1.proc.kill("SIGKILL");
  await d1.exited;
  await sleep(1000); // the agents must still be alive a second after their daemon died
  assert.deepEqual(pids.filter(alive), pids, "the agents outlived their daemon (this is the situation being tested)");

  const d2 = await w.startDaemon({}, { configFile: d1.configFile });
  const stopped = d2.logs.filter((l) => l.evt === "agent.leftover_stopped").map((l) => Number(l.pgid));
  assert.deepEqual([...stopped].sort(), [...pids].sort(), "each left-over agent group is stopped, and nothing else");
  await waitFor(() => pids.filter(alive).length === 0, {
    timeoutMs: 5000,
    what: () => `the stopped agents to exit (${pids.filter(alive).join(", ")} still run)`,
  });
  assert.deepEqual(pids.filter(alive), [], "none of them runs any more");

  // The new daemon still answers.
  const again = await w.owner.post("@agent still there?");
  await w.waitReply(again);
  await d2.stop();
});
