/**
 * Resident memory of a process and everything it started (an agent runs its MCP proxy,
 * shells and, for Claude, a CLI below it), read from Linux's /proc. Elsewhere, or for a
 * process that is gone, the answer is undefined and the status page shows "n/a".
 */
import { readdirSync, readFileSync } from "node:fs";

/** pid → parent pid for every process visible in /proc; empty off Linux. */
export function processParents(): Map<number, number> {
  const parents = new Map<number, number>();
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return parents;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // The command name (field 2) may contain spaces and parentheses: read after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (Number.isFinite(ppid)) parents.set(Number(name), ppid);
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return parents;
}

function rssBytes(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Resident bytes of `pid` and its descendants; undefined when `pid` cannot be read. */
export function treeRss(pid: number, parents: Map<number, number> = processParents()): number | undefined {
  const own = rssBytes(pid);
  if (own === undefined) return undefined;
  const children = new Map<number, number[]>();
  for (const [child, parent] of parents) children.set(parent, [...(children.get(parent) ?? []), child]);
  let total = own;
  const todo = [...(children.get(pid) ?? [])];
  for (let p = todo.pop(); p !== undefined; p = todo.pop()) {
    total += rssBytes(p) ?? 0;
    todo.push(...(children.get(p) ?? []));
  }
  return total;
}
