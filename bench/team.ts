/**
 * Figure 14 — a team in one daemon (`agents:`): the idle RSS of one daemon running 1, 3 and
 * 10 identities, each a member of the same 500 channels, against 1, 3 and 10 daemons of one
 * identity each (their RSS added up), same run, same dev relay. Idle: every agent listening
 * in its 500 channels, three seconds after the last `daemon.started`. Only the daemons'
 * own processes are counted (a warm agent is a process of its own either way).
 *
 * Run alone: `node --import tsx bench/team.ts`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { generateSecretKey, getPublicKey, nip19 } from "nostr-tools";
import { stringify } from "yaml";
import { sleep } from "../kit/wait.js";
import { rssMiB } from "./busy.js";
import { runIfMain } from "./standalone.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI = join(ROOT, "dist", "cli.js");
const CHANNELS = 500;
export const TEAM_SIZES = [1, 3, 10] as const;

export interface TeamResult {
  /** Identities → the one daemon's RSS (MiB). */
  team: Record<number, number>;
  /** Identities → the RSS of that many daemons added up (MiB). */
  separate: Record<number, number>;
}

/** Waits until `count` `daemon.started` lines have come from `proc`. */
function started(proc: ChildProcess, count: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = 0;
    const t = setTimeout(() => reject(new Error(`team bench: ${what} did not start within 180 s (${seen} of ${count})`)), 180_000);
    proc.on("exit", (code) => reject(new Error(`team bench: ${what} exited (${code}) before it started`)));
    createInterface({ input: proc.stdout! }).on("line", (l) => {
      if (l.includes('"evt":"daemon.started"') && ++seen === count) {
        clearTimeout(t);
        resolve();
      }
    });
  });
}

export async function benchTeam(): Promise<TeamResult> {
  const dir = mkdtempSync(join(tmpdir(), "bb-bench-team-"));
  const children: ChildProcess[] = [];
  const stopAll = async (procs: ChildProcess[]) => {
    for (const p of procs) p.kill("SIGTERM");
    await Promise.all(procs.map((p) => (p.exitCode !== null || p.signalCode !== null ? undefined : new Promise((r) => p.on("exit", r)))));
  };
  try {
    const max = Math.max(...TEAM_SIZES);
    const keys = Array.from({ length: max }, () => generateSecretKey());
    const owner = getPublicKey(generateSecretKey());
    const members = [owner, ...keys.map((k) => getPublicKey(k))];
    const seed = join(dir, "seed.yaml");
    writeFileSync(
      seed,
      stringify(
        {
          channels: Array.from({ length: CHANNELS }, (_, i) => ({
            id: randomUUID(),
            name: `bench-${i}`,
            about: `bench channel ${i}`,
            members,
          })),
        },
        { aliasDuplicateObjects: false },
      ),
    );
    const relay = spawn(process.execPath, [CLI, "dev-relay", "--port", "0", "--seed", seed, "--no-limits"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    children.push(relay);
    const url = String((await createInterface({ input: relay.stdout! })[Symbol.asyncIterator]().next()).value);
    if (!url.startsWith("ws://")) throw new Error(`team bench: the dev relay did not start (first line: ${url})`);

    const shared = (stateDir: string) => ({
      relay: { url, presence: false },
      identity: { owner: nip19.npubEncode(owner) },
      agent: { command: "buzz-bridge", args: ["demo-agent"] },
      state_dir: stateDir,
      log: { level: "info" },
    });
    const run = (config: object, name: string) => {
      const file = join(dir, `${name}.yaml`);
      writeFileSync(file, stringify(config));
      const p = spawn(process.execPath, [CLI, "run", "-c", file], { stdio: ["ignore", "pipe", "inherit"] });
      children.push(p);
      return p;
    };
    const result: TeamResult = { team: {}, separate: {} };
    for (const n of TEAM_SIZES) {
      const one = run(
        { ...shared(join(dir, `team-${n}`)), agents: keys.slice(0, n).map((k) => ({ identity: { secret_key: nip19.nsecEncode(k) } })) },
        `team-${n}`,
      );
      await started(one, n, `the team of ${n}`);
      await sleep(3000);
      result.team[n] = rssMiB(one.pid!);
      await stopAll([one]);

      const many = keys.slice(0, n).map((k, i) =>
        run(
          {
            ...shared(join(dir, `single-${n}-${i}`)),
            identity: { secret_key: nip19.nsecEncode(k), owner: nip19.npubEncode(owner) },
          },
          `single-${n}-${i}`,
        ),
      );
      await Promise.all(many.map((p, i) => started(p, 1, `daemon ${i + 1} of ${n}`)));
      await sleep(3000);
      result.separate[n] = many.reduce((sum, p) => sum + rssMiB(p.pid!), 0);
      await stopAll(many);
    }
    return result;
  } finally {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, benchTeam);
