/**
 * `doctor`'s sandbox check: is bubblewrap usable here, and, when it is, one run of the
 * very sandbox an agent gets (for a scratch channel), from inside which a small node
 * script reports what it can reach: the bridge's own paths (which must be hidden), its
 * cwd and HOME (which must be writable), the processes it sees, its network interfaces.
 */
import { spawn } from "node:child_process";
import { createServer, type AddressInfo } from "node:net";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentSandbox, agentEnvironment, BUBBLEWRAP_ADVICE, retrySandboxSetup } from "../../agent/index.js";
import type { LoadedConfig } from "../../config/load.js";
import { bridgePaths, sandboxFor } from "../../agent/sandbox-config.js";
import type { SandboxLaunch } from "../../agent/sandbox-plan.js";
import { SLIRP4NETNS_ADVICE, spawnWithPrivateNetwork } from "../../agent/sandbox-net.js";
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
const s = require("node:net").connect({ host: "127.0.0.1", port: t.loopbackPort });
let told = false;
const report = (loopback) => { if (told) return; told = true; s.destroy(); process.stdout.write(JSON.stringify({ paths: t.paths.map((p) => ({ ...p, reach: reach(p.path) })), cwd: writes(t.cwd), home: writes(t.home), root: writes("/usr"), processes: pids.length, daemon, ifaces, loopback })); };
s.once("connect", () => report(true)); s.once("error", () => report(false)); s.setTimeout(3000, () => report(false));
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
  /** A port the doctor listens on at the host's 127.0.0.1 was reachable from inside. */
  loopback: boolean;
}

const NETWORK_WORDS = {
  none: "no network but its own loopback",
  private: "a network of its own (slirp4netns): outbound only",
  host: "the host's network",
} as const;

/**
 * Runs `argv` in the sandbox a channel's agent gets, on the network it gets there (a network
 * of its own or none, with the loopback ports the config carries in), in a scratch state
 * directory; resolves to its stdout and that network. Undefined where an agent would use the
 * host's network (unsandboxed, or no network of its own here): there the host's view is the
 * agent's.
 */
export async function inAgentsNetwork(
  loaded: LoadedConfig,
  argv: string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<{ stdout: string; network: keyof typeof NETWORK_WORDS; words: string } | undefined> {
  const configured = sandboxFor(loaded);
  const e = configured.attainable(); // none to be had: the sandbox line says why
  if (!e?.sandboxed || e.network === "host") return undefined;
  const network = e.network;
  const scratch = mkdtempSync(join(tmpdir(), "buzz-bridge-doctor-net-"));
  const sandbox = new AgentSandbox(
    { ...configured.policy, stateDir: scratch },
    undefined,
    () => configured.probe,
    () => configured.slirp,
  );
  try {
    await sandbox.start();
    const cwd = join(scratch, "cwd");
    mkdirSync(cwd);
    const launch = sandbox.launch({ channel: { id: "doctor-network", name: "doctor-network" }, cwd, env })!;
    const stdout = await runLaunched(launch, argv, { ...env, ...launch.env }, timeoutMs);
    return { stdout, network, words: NETWORK_WORDS[network] };
  } finally {
    sandbox.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** A launched command that failed, with its stderr. */
class LaunchFailed extends Error {
  constructor(
    readonly stderr: string,
    code: number | null,
    why?: string,
  ) {
    super(why ?? (stderr || `exit ${code}`).trim().split("\n")[0]);
  }
}

/**
 * Runs `argv` through the sandbox launch (its private network first, when it has one);
 * resolves to stdout. Bubblewrap's own failure to set the sandbox up is tried again, as the
 * daemon does for an agent (retrySandboxSetup: its loopback setup fails now and then under
 * load), so doctor reports the sandbox a turn would get.
 */
function runLaunched(launch: SandboxLaunch, argv: string[], env: Record<string, string>, timeoutMs: number): Promise<string> {
  return retrySandboxSetup(() => runLaunchedOnce(launch, argv, env, timeoutMs), {
    stderrOf: (err) => (err instanceof LaunchFailed ? err.stderr : undefined),
  });
}

function runLaunchedOnce(launch: SandboxLaunch, argv: string[], env: Record<string, string>, timeoutMs: number): Promise<string> {
  const opts = { env };
  const { child, ready } = launch.network
    ? spawnWithPrivateNetwork(launch.command, [...launch.args, ...argv], launch.network, opts)
    : { child: spawn(launch.command, [...launch.args, ...argv], { ...opts, stdio: ["ignore", "pipe", "pipe"] }), ready: Promise.resolve() };
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    // Its private network not set up: what bubblewrap said comes with the close.
    let notReady: Error | undefined;
    ready.catch((err: Error) => {
      notReady = err;
      child.kill("SIGKILL");
    });
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      if (notReady) reject(new LaunchFailed(stderr, code, notReady.message));
      else if (code === 0) resolve(stdout);
      else reject(new LaunchFailed(stderr, code));
    });
  });
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
    const team = sandbox.policy.team;
    if (team && !team.allowUnsandboxed)
      return {
        name,
        mark: "fail",
        summary: `agent.sandbox is auto but ${probe.reason}: in this team an unsandboxed agent could read ${team.exposed.join(", ")}, so run refuses to start`,
        details: [`to fix: ${BUBBLEWRAP_ADVICE}; or accept it with team.allow_unsandboxed: true`],
      };
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
    const isolation = mode === "off" ? { sandbox: "auto" as const } : {};
    // The sandbox's own files (its unreadable placeholder) go to the scratch directory: doctor
    // creates nothing in state_dir, which may not exist yet or belong to the service user.
    const scratchSandbox = new AgentSandbox({ ...sandbox.policy, stateDir: scratch }, undefined, () => probe);
    const launch = scratchSandbox.launch({ channel: { id: "doctor-probe", name: "doctor-probe" }, cwd, home, env, isolation })!;
    const paths = bridgePaths(loaded);
    // A service on the host's loopback, as the daemon's /status is: a sandbox of its own network must not reach it.
    const listener = createServer((c) => c.destroy());
    await new Promise<void>((r) => listener.listen(0, "127.0.0.1", () => r()));
    const loopbackPort = (listener.address() as AddressInfo).port;
    const arg = JSON.stringify({ paths, cwd, home, pid: process.pid, loopbackPort });
    const stdout = await runLaunched(launch, [process.execPath, "-e", PROBE_SCRIPT, arg], { ...env, ...launch.env }, timeoutMs).finally(
      () => listener.close(),
    );
    let out: ProbeOut;
    try {
      out = JSON.parse(stdout) as ProbeOut;
    } catch {
      throw new Error(`unexpected output: ${stdout.slice(0, 200)}`);
    }
    const net = scratchSandbox.effective(isolation).network;
    const exposed = out.paths.filter((p) => p.reach === "listable" || p.reach === "readable");
    const details = [
      `can reach: the channel's working directory (read-write), its own HOME under ${join(cfg.state_dir, "homes")} (read-write), its session's link socket, a private /tmp, the rest of the filesystem read-only${cfg.agent.sandbox_binds.length ? `, ${cfg.agent.sandbox_binds.map((b) => `${b.path} (${b.mode})`).join(", ")}` : ""}`,
      `cannot reach: ${out.paths.map((p) => `${p.label} ${p.path} (${p.reach})`).join(", ")}`,
      `processes: sees ${out.processes} (its own pid namespace)${out.daemon ? "; THE DAEMON IS VISIBLE" : ", not the daemon's"}`,
      `network: ${out.ifaces.length ? out.ifaces.join(", ") : "no interfaces"}${network ? "" : " (agent.network: off)"}; ${NETWORK_WORDS[net]}; the host's loopback ${out.loopback ? "IS REACHABLE" : "is out of reach"}`,
    ];
    const broken = [
      ...exposed.map((p) => `${p.label} ${p.path} is ${p.reach}`),
      ...(!out.cwd ? ["its working directory is not writable"] : []),
      ...(!out.home ? ["its HOME is not writable"] : []),
      ...(out.root ? ["the host filesystem is writable"] : []),
      ...(out.daemon ? ["the daemon's process is visible"] : []),
      ...(out.loopback && net !== "host" ? ["the host's loopback is reachable"] : []),
    ];
    if (broken.length) return { name, mark: "fail", summary: `the sandbox does not hold: ${broken.join("; ")}`, details };
    const scope = mode === "off" ? " in the channels that ask for it" : "";
    if (net === "host") {
      const why = sandbox.slirp.ok ? "" : `${sandbox.slirp.reason}; `;
      return {
        name,
        mark: "ok",
        summary: `warning: ${probe.version}: agents run sandboxed${scope}, but ${why}they share the host's network and reach its loopback (the daemon's /status and /metrics among it)`,
        details: [...details, `to give them a network of their own: ${SLIRP4NETNS_ADVICE}`],
      };
    }
    return { name, mark: "ok", summary: `${probe.version}: agents run sandboxed${scope}; network ${network ? "on" : "off"}`, details };
  } catch (err) {
    return { name, mark: "fail", summary: `bubblewrap works but the agent's sandbox did not start: ${(err as Error).message}` };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
