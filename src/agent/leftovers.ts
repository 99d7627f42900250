/**
 * Agents a killed daemon left behind. Every agent runs in its own process group (spawned
 * detached), which the daemon records in its state while it runs; a daemon that is
 * SIGKILLed cannot stop them, and an agent that ignores the end of its stdin (busy in a
 * tool, or written that way) keeps running, holding memory and maybe its working tree.
 * The next start stops every recorded group that is still the same process.
 *
 * "The same process" is the boot id plus the process start time from /proc (Linux): a
 * recorded id that was reused by an unrelated process after a reboot or wrap-around is
 * left alone. The group's leader may be gone while what it started lives on (a launcher
 * killed alone, its agent still running): a group id stays taken while any member lives, so
 * members of the recorded group started no earlier than the leader, in this boot, are the
 * agent's. Where /proc is missing, nothing is recorded and nothing is stopped.
 */
import { readdirSync, readFileSync } from "node:fs";
import type { Logger } from "../base/log.js";
import { sleep } from "../base/backoff.js";

const bootId = (): string => readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();

/** A live process's state, process group and start time (clock ticks), from /proc; undefined when gone. */
function processStat(pid: number): { state: string; pgrp: number; start: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the parenthesised command name, which may hold spaces: state is field 3,
    // the process group field 5, starttime field 22.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const start = fields[19];
    return start ? { state: fields[0]!, pgrp: Number(fields[2]), start } : undefined;
  } catch {
    return undefined;
  }
}

/** `<boot id>:<start time in clock ticks>` of a live process, or undefined. */
function processIdentity(pid: number): string | undefined {
  try {
    const stat = processStat(pid);
    // A zombie has stopped already; only its parent can reap it.
    if (!stat || stat.state === "Z") return undefined;
    return `${bootId()}:${stat.start}`;
  } catch {
    return undefined;
  }
}

/** True when the recorded group is the agent's: its leader is the recorded process, or, the leader gone, members it left. */
function isRecordedGroup(r: { pgid: number; identity: string }): boolean {
  if (processIdentity(r.pgid) === r.identity) return true;
  const [boot, start] = r.identity.split(":");
  try {
    // A leader that is a zombie is gone too: killed with its parent dead, it waits for an init
    // that may be slow to reap it (in a container), while the members it left run on.
    const leader = processStat(r.pgid);
    if ((leader && leader.state !== "Z") || boot !== bootId()) return false;
    for (const name of readdirSync("/proc")) {
      if (!/^\d+$/.test(name)) continue;
      const stat = processStat(Number(name));
      if (stat && stat.pgrp === r.pgid && stat.state !== "Z" && BigInt(stat.start) >= BigInt(start ?? "0")) return true;
    }
  } catch {
    return false;
  }
  return false;
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
  const stale = recorded.filter(isRecordedGroup);
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
