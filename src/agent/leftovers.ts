/**
 * Agents a killed daemon left behind. Every agent runs in its own process group (spawned
 * detached), which the daemon records in its state while it runs; a daemon that is
 * SIGKILLed cannot stop them, and an agent that ignores the end of its stdin (busy in a
 * tool, or written that way) keeps running, holding memory and maybe its working tree.
 * The next start stops every recorded group that is still the same process.
 *
 * "The same process" is the boot id plus the process start time from /proc (Linux): a
 * recorded id that was reused by an unrelated process after a reboot or wrap-around is
 * left alone. Where /proc is missing, nothing is recorded and nothing is stopped.
 */
import { readFileSync } from "node:fs";
import type { Logger } from "../base/log.js";
import { sleep } from "../base/backoff.js";

/** `<boot id>:<start time in clock ticks>` of a live process, or undefined. */
function processIdentity(pid: number): string | undefined {
  try {
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Field 22 (starttime), counted after the parenthesised command name, which may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // A zombie has stopped already; only its parent can reap it.
    if (fields[0] === "Z") return undefined;
    const start = fields[19];
    return start ? `${boot}:${start}` : undefined;
  } catch {
    return undefined;
  }
}

const alive = (pgid: number): boolean => {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * Stops the recorded groups that are still the processes the daemon started: SIGTERM to the
 * group, then SIGKILL after `graceMs`. Returns the groups it stopped.
 */
async function stopLeftoverAgents(recorded: Array<{ pgid: number; identity: string }>, log: Logger, graceMs = 2000): Promise<number[]> {
  const stale = recorded.filter((r) => processIdentity(r.pgid) === r.identity);
  for (const r of stale) {
    try {
      process.kill(-r.pgid, "SIGTERM");
    } catch {
      // gone meanwhile
    }
  }
  const deadline = Date.now() + graceMs;
  while (stale.some((r) => alive(r.pgid)) && Date.now() < deadline) await sleep(50);
  for (const r of stale) {
    let signal = "SIGTERM";
    if (alive(r.pgid)) {
      signal = "SIGKILL";
      try {
        process.kill(-r.pgid, "SIGKILL");
      } catch {
        // gone meanwhile
      }
    }
    log.warn(
      { evt: "agent.leftover_stopped", pgid: r.pgid, signal },
      "stopped an agent process group left running by a daemon that did not shut down",
    );
  }
  return stale.map((r) => r.pgid);
}

/** Where the groups are recorded: the daemon's own state. */
export interface AgentGroupRecord {
  recordAgentGroup(pgid: number, identity: string): void;
  forgetAgentGroup(pgid: number): void;
  agentGroups(): Array<{ pgid: number; identity: string }>;
}

/** At start, before new agents spawn: stops what a killed predecessor left and forgets every record. */
export async function stopRecordedLeftovers(record: AgentGroupRecord, log: Logger): Promise<void> {
  await stopLeftoverAgents(record.agentGroups(), log);
  for (const g of record.agentGroups()) record.forgetAgentGroup(g.pgid);
}

/** Records an agent's process group while it runs, so a successor can stop it if this daemon is killed. */
export function trackAgentGroup(record: AgentGroupRecord, pid: number | undefined, exited: Promise<unknown>): void {
  const identity = pid === undefined ? undefined : processIdentity(pid);
  if (pid === undefined || !identity) return;
  record.recordAgentGroup(pid, identity);
  void exited.then(() => {
    try {
      record.forgetAgentGroup(pid);
    } catch {
      // the store closed first (shutdown): the next start finds the group gone
    }
  });
}
