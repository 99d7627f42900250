/**
 * An agent whose command is a launcher that runs the real agent as its child (codex-acp's
 * npm launcher does, with spawnSync): when the launcher dies alone, its child must not live on.
 * The child here is the stubborn demo agent, which does not exit when its stdin ends.
 *
 * - While the daemon runs: the launcher is killed (as the OOM killer would); the bridge stops
 *   what it left in the agent's process group, and the next mention is answered by a new agent.
 * - After a SIGKILLed daemon whose launcher then died too: the next start finds the recorded
 *   group by the members it left and stops them.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO, World } from "../kit/world.js";
import { waitFor } from "../kit/wait.js";

const FIXTURES = join(REPO, "test", "fixtures");
let w: World;
const groups: number[] = [];
after(async () => {
  for (const g of groups) {
    try {
      process.kill(-g, "SIGKILL");
    } catch {
      // stopped (the pass case)
    }
  }
  await w?.close();
});

/** Live (not zombie) members of a process group other than `except`. */
function members(pgid: number, except?: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] !== "Z" && Number(fields[2]) === pgid && Number(name) !== except) out.push(Number(name));
    } catch {
      // gone
    }
  }
  return out;
}

const agent = {
  command: process.execPath,
  args: [join(FIXTURES, "agent-launcher.mjs"), join(FIXTURES, "agent-stubborn.mjs")],
  // Unsandboxed: a bubblewrap sandbox dies with its parent, so only a plain agent can outlive its launcher.
  sandbox: "off",
  warm_spare: false,
};

test("a launcher killed alone: the bridge stops the agent it left running, and answers the next mention", { timeout: 90_000 }, async () => {
  w = await World.create();
  const d = await w.startDaemon({ agent, log: { level: "info" } });
  const ev = await w.owner.post("@agent hello");
  await w.waitReplies(ev);
  const launcher = Number((await d.waitLog((l) => l.evt === "agent.initialized")).agent_pid);
  groups.push(launcher);
  const [child] = members(launcher, launcher);
  assert.ok(child, "the launcher runs the agent as its child, in the agent's process group");

  process.kill(launcher, "SIGKILL");
  await waitFor(() => members(launcher).length === 0, {
    timeoutMs: 10_000,
    what: () => `the launcher's child to be stopped (group ${launcher} still has ${members(launcher).join(", ")})`,
  });

  const again = await w.owner.post("@agent still there?");
  await w.waitReplies(again);
  await d.stop();
});

test("a SIGKILLed daemon whose launcher died too: the next start stops what the launcher left", { timeout: 90_000 }, async () => {
  const d1 = await w.startDaemon({ agent, log: { level: "info" } });
  const ev = await w.owner.post("@agent hello again");
  await w.waitReplies(ev);
  const launcher = Number((await d1.waitLog((l) => l.evt === "agent.initialized")).agent_pid);
  groups.push(launcher);
  const [child] = members(launcher, launcher);
  assert.ok(child, "the launcher's agent runs");

  d1.proc.kill("SIGKILL");
  await d1.exited;
  process.kill(launcher, "SIGKILL");
  await waitFor(() => members(launcher).length === 1, { timeoutMs: 5000, what: "the launcher to be gone, its agent left" });
  assert.deepEqual(members(launcher), [child], "the agent outlived its launcher and daemon (the situation being tested)");

  const d2 = await w.startDaemon({}, { configFile: d1.configFile });
  // An agent that ignores SIGTERM is stopped once the kill escalates: the line may follow the start.
  await d2.waitLog((l) => l.evt === "agent.leftover_stopped", 15_000);
  const stopped = d2.logs.filter((l) => l.evt === "agent.leftover_stopped").map((l) => Number(l.pgid));
  assert.deepEqual(stopped, [launcher], "the recorded group is found by the agent its launcher left");
  await waitFor(() => members(launcher).length === 0, { timeoutMs: 5000, what: "the left agent to exit" });

  const again = await w.owner.post("@agent are you back?");
  await w.waitReplies(again);
  await d2.stop();
});
