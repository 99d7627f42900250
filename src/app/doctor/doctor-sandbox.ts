/**
 * `doctor`'s sandbox check: is bubblewrap usable here, and, when it is, one run of the
 * very sandbox an agent gets (for a scratch channel), from inside which a small node
 * script reports what it can reach: the bridge's own paths (which must be hidden), its
 * cwd and HOME (which must be writable), the processes it sees, its network interfaces.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentSandbox, agentEnvironment, BUBBLEWRAP_ADVICE } from "../../agent/index.js";
import type { LoadedConfig } from "../../config/load.js";
import { bridgePaths, sandboxFor } from "../../agent/sandbox-config.js";
import type { CheckResult } from "./doctor-result.js";

/** Runs inside the sandbox: argv[1] is the JSON of what to try; prints what it found. */
const PROBE_SCRIPT = `
const fs = require("node:fs");
const t = JSON.parse(process.argv[1]);
const reach = (p) => { try { fs.statSync(p); } catch { return "hidden"; } try { return fs.readdirSync(p).length ? "listable" : "empty"; } catch {} try { fs.readFileSync(p); return "readable"; } catch { return "unreadable"; } };
const writes = (d) => { const f = d + "/.buzz-bridge-doctor"; try { fs.writeFileSync(f, "x"); fs.rmSync(f); return true; } catch { return false; } };
const pids = fs.readdirSync("/proc").filter((n) => /^\\d+$/.test(n));
let daemon = false; try { daemon = fs.readFileSync("/proc/" + t.pid + "/cmdline", "utf8").includes("doctor"); } catch {}
let ifaces = []; try { ifaces = fs.readFileSync("/proc/net/dev", "utf8").split("\\n").slice(2).map((l) => l.split(":")[0].trim()).filter(Boolean); } catch {}
process.stdout.write(JSON.stringify({ paths: t.paths.map((p) => ({ ...p, reach: reach(p.path) })), cwd: writes(t.cwd), home: writes(t.home), root: writes("/usr"), processes: pids.length, daemon, ifaces }));
`;

interface ProbeOut {
  /** hidden: not there; empty: an empty directory in its place; unreadable: cannot be opened. */
  paths: Array<{ label: string; path: string; reach: "hidden" | "empty" | "unreadable" | "listable" | "readable" }>;
  cwd: boolean;
  home: boolean;
  root: boolean;
  processes: number;
  daemon: boolean;
  ifaces: string[];
}

export async function sandboxCheck(loaded: LoadedConfig, timeoutMs: number): Promise<CheckResult> {
  const cfg = loaded.config;
  const name = "sandbox";
  const mode = cfg.agent.sandbox;
  const asked = [mode, ...cfg.channels.map((c) => c.agent?.sandbox)].filter((m) => m !== undefined);
  if (asked.every((m) => m === "off")) {
    return {
      name,
      mark: "ok",
      summary:
        "off (agent.sandbox: off): agents run as the daemon's user and can read its key file, config, state directory and every channel's files",
    };
  }
  const sandbox = sandboxFor(loaded);
  const probe = sandbox.probe;
  if (!probe.ok) {
    if (asked.includes("bubblewrap"))
      return { name, mark: "fail", summary: `agent.sandbox is bubblewrap but ${probe.reason}`, details: [`to fix: ${BUBBLEWRAP_ADVICE}`] };
    return {
      name,
      mark: "ok",
      summary: `warning: ${probe.reason}; with agent.sandbox: auto agents run WITHOUT a sandbox`,
      details: [`to sandbox them: ${BUBBLEWRAP_ADVICE}`],
    };
  }
  const scratch = mkdtempSync(join(tmpdir(), "buzz-bridge-doctor-"));
  try {
    const cwd = join(scratch, "cwd");
    const home = join(scratch, "home");
    const env = agentEnvironment({ configured: cfg.agent.env, secret: loaded.secretKey }).env;
    const network = cfg.agent.network === "on";
    mkdirSync(cwd);
    mkdirSync(home);
    // The sandbox's own files (its unreadable placeholder) go to the scratch directory: doctor
    // creates nothing in state_dir, which may not exist yet or belong to the service user.
    const scratchSandbox = new AgentSandbox({ ...sandbox.policy, stateDir: scratch }, undefined, () => probe);
    const launch = scratchSandbox.launch({ channelName: "doctor", cwd, home, env, isolation: mode === "off" ? { sandbox: "auto" } : {} })!;
    const paths = bridgePaths(loaded);
    const arg = JSON.stringify({ paths, cwd, home, pid: process.pid });
    const out = await new Promise<ProbeOut>((resolve, reject) => {
      execFile(
        launch.command,
        [...launch.args, process.execPath, "-e", PROBE_SCRIPT, arg],
        { env: { ...env, ...launch.env }, timeout: timeoutMs, encoding: "utf8" },
        (err, stdout, stderr) => {
          if (err) reject(new Error(`${(stderr || err.message).trim().split("\n")[0]}`));
          else {
            try {
              resolve(JSON.parse(stdout) as ProbeOut);
            } catch {
              reject(new Error(`unexpected output: ${stdout.slice(0, 200)}`));
            }
          }
        },
      );
    });
    const exposed = out.paths.filter((p) => p.reach === "listable" || p.reach === "readable");
    const details = [
      `can reach: the channel's working directory (read-write), its own HOME under ${join(cfg.state_dir, "homes")} (read-write), its session's link socket, a private /tmp, the rest of the filesystem read-only${cfg.agent.sandbox_binds.length ? `, ${cfg.agent.sandbox_binds.map((b) => `${b.path} (${b.mode})`).join(", ")}` : ""}`,
      `cannot reach: ${out.paths.map((p) => `${p.label} ${p.path} (${p.reach})`).join(", ")}`,
      `processes: sees ${out.processes} (its own pid namespace)${out.daemon ? "; THE DAEMON IS VISIBLE" : ", not the daemon's"}`,
      `network: ${out.ifaces.length ? out.ifaces.join(", ") : "no interfaces"}${network ? "" : " (agent.network: off)"}`,
    ];
    const broken = [
      ...exposed.map((p) => `${p.label} ${p.path} is ${p.reach}`),
      ...(!out.cwd ? ["its working directory is not writable"] : []),
      ...(!out.home ? ["its HOME is not writable"] : []),
      ...(out.root ? ["the host filesystem is writable"] : []),
      ...(out.daemon ? ["the daemon's process is visible"] : []),
    ];
    if (broken.length) return { name, mark: "fail", summary: `the sandbox does not hold: ${broken.join("; ")}`, details };
    const scope = mode === "off" ? " in the channels that ask for it" : "";
    return { name, mark: "ok", summary: `${probe.version}: agents run sandboxed${scope}; network ${network ? "on" : "off"}`, details };
  } catch (err) {
    return { name, mark: "fail", summary: `bubblewrap works but the agent's sandbox did not start: ${(err as Error).message}` };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
