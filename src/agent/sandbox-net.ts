/**
 * A sandboxed agent's own network (`agent.network: on`, docs/security.md): bubblewrap gives
 * the sandbox an empty network namespace (`--unshare-net`) and slirp4netns, outside it,
 * connects that namespace to the world as a user-mode NAT with the host's loopback refused
 * (`--disable-host-loopback`). The agent reaches the internet (its model's API, package
 * registries) but no service listening on the host's 127.0.0.1 or ::1 — the daemon's
 * /status and /metrics among them — and none of the host's abstract unix sockets. The
 * daemon↔proxy link is a unix socket in the sandbox's link directory: not a network
 * path, so it is untouched.
 *
 * The order matters, so nothing in the sandbox runs before its network is there: bubblewrap
 * writes the sandbox's pid on `--info-fd` and waits on `--block-fd`; slirp4netns joins that
 * pid's namespaces, brings up tap0 (10.0.2.100/24, gateway 10.0.2.2, DNS 10.0.2.3) and says
 * so on its `--ready-fd`; only then is bubblewrap let go on to run the command. slirp4netns
 * ends when its `--exit-fd` closes: when the sandbox exits, or with the daemon.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from "node:child_process";
import { randomUUID } from "node:crypto";
import { accessSync, closeSync, constants, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";

/** The descriptors bubblewrap reports on and waits on (passed as pipes 3 and 4 of its stdio). */
export const INFO_FD = 3;
export const BLOCK_FD = 4;
/** slirp4netns's DNS forwarder inside the namespace (the host's own resolver answers). */
export const SLIRP_DNS = "10.0.2.3";
/** The device slirp4netns makes the sandbox's network interface with. */
const TUN = "/dev/net/tun";
/** How long bubblewrap and slirp4netns together may take to set up a sandbox's network. */
const NETWORK_SETUP_MS = 15_000;

export type Slirp4netnsProbe = { ok: true; path: string; version: string; seccomp: boolean } | { ok: false; reason: string };

/** What to install when slirp4netns is missing; shown at start and by doctor. */
export const SLIRP4NETNS_ADVICE =
  "install slirp4netns (Debian/Ubuntu: apt-get install slirp4netns; it needs /dev/net/tun, mode 0666 as distributions ship it) " +
  "so that sandboxed agents get outbound network without the host's loopback, or set agent.network: off";

/** Is slirp4netns installed, and built with seccomp (then it runs with `--enable-seccomp`)? */
export function probeSlirp4netns(bin = "slirp4netns", env: NodeJS.ProcessEnv = process.env): Slirp4netnsProbe {
  const r = spawnSync(bin, ["--version"], { encoding: "utf8", env, timeout: 10_000 });
  if (r.error) {
    const code = (r.error as NodeJS.ErrnoException).code;
    return {
      ok: false,
      reason: code === "ENOENT" ? `slirp4netns (${bin}) is not installed` : `slirp4netns cannot run: ${r.error.message}`,
    };
  }
  if (r.status !== 0) return { ok: false, reason: `slirp4netns --version failed: ${(r.stderr || "").trim().split("\n")[0]}` };
  try {
    accessSync(TUN, constants.R_OK | constants.W_OK);
  } catch (err) {
    return {
      ok: false,
      reason: `${TUN} is not open to this user (${(err as NodeJS.ErrnoException).code}), so slirp4netns cannot give a sandbox its network (distributions ship it with mode 0666)`,
    };
  }
  const first = r.stdout.trim().split("\n")[0] ?? "slirp4netns";
  return { ok: true, path: bin, version: first, seccomp: /libseccomp:/.test(r.stdout) };
}

export class SandboxNetworkError extends Error {
  override name = "SandboxNetworkError";
}

export interface PrivateNetwork {
  slirp4netns: string;
  seccomp: boolean;
}

/**
 * Spawns bubblewrap (`command args`, whose args carry `--info-fd 3 --block-fd 4`) and gives
 * its sandbox the private network before letting it run. `ready` rejects with a
 * SandboxNetworkError naming what failed; the caller then kills `child`.
 */
export function spawnWithPrivateNetwork(
  command: string,
  args: string[],
  net: PrivateNetwork,
  opts: Omit<SpawnOptions, "stdio">,
): { child: ChildProcess; ready: Promise<void> } {
  const block = blockingPipe();
  let child: ChildProcess;
  try {
    child = spawn(command, args, { ...opts, stdio: ["pipe", "pipe", "pipe", "pipe", block.read] });
  } catch (err) {
    closeSync(block.write);
    throw err;
  } finally {
    closeSync(block.read);
  }
  const ready = connect(child, net, block.write);
  // The caller handles a failure; an unobserved rejection must not end the process.
  ready.catch(() => undefined);
  return { child, ready };
}

/**
 * A blocking pipe for bubblewrap's `--block-fd`: the pipes Node gives a child beyond stdin,
 * stdout and stderr are non-blocking, and bubblewrap's read of one returns at once, letting
 * the sandbox run before its network is there. A FIFO's two ends, each opened on its own
 * (blocking), do block the reader until something is written. bubblewrap gets the read end
 * only and the daemon keeps the write end, so a daemon that dies before the network is there
 * ends the wait (end of file): the sandbox's command then finds its stdin closed and exits.
 * A reader holding a write end too would wait for ever, an orphan no one ends. The FIFO is
 * first opened read-write so that neither open waits for a peer, then closed.
 */
function blockingPipe(): { read: number; write: number } {
  const path = join(tmpdir(), `buzz-bridge-block-${process.pid}-${randomUUID()}`);
  const made = spawnSync("mkfifo", ["-m", "600", path], { encoding: "utf8" });
  if (made.status !== 0)
    throw new SandboxNetworkError(`cannot make a FIFO at ${path}: ${(made.stderr || made.error?.message || "").trim()}`);
  try {
    const both = openSync(path, "r+");
    try {
      const write = openSync(path, "w");
      try {
        return { read: openSync(path, "r"), write };
      } catch (err) {
        closeSync(write);
        throw err;
      }
    } finally {
      closeSync(both);
    }
  } finally {
    rmSync(path, { force: true });
  }
}

async function connect(child: ChildProcess, net: PrivateNetwork, block: number): Promise<void> {
  const info = child.stdio[INFO_FD] as Readable;
  // Once only: a descriptor number closed twice may by then belong to another pipe.
  let open = true;
  const release = () => {
    if (!open) return;
    open = false;
    closeSync(block);
  };
  child.once("exit", release);
  let pid: number;
  try {
    pid = await sandboxPid(info, child);
  } catch (err) {
    release();
    throw err;
  }
  const slirp = spawn(
    net.slirp4netns,
    [
      "--configure",
      "--mtu=65520",
      "--disable-host-loopback",
      ...(net.seccomp ? ["--enable-seccomp"] : []),
      `--ready-fd=${INFO_FD}`,
      `--exit-fd=${BLOCK_FD}`,
      String(pid),
      "tap0",
    ],
    { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] },
  );
  // Its exit-fd stays open as long as the sandbox lives; closing it ends slirp4netns.
  const exitFd = slirp.stdio[BLOCK_FD] as Writable;
  exitFd.on("error", () => undefined);
  const stop = () => exitFd.destroy();
  child.once("exit", stop);
  try {
    await slirpReady(slirp);
  } catch (err) {
    stop();
    slirp.kill("SIGKILL");
    release();
    throw err;
  }
  writeSync(block, "1");
  release();
}

/** bubblewrap's `--info-fd` JSON: `{"child-pid": N, …}`. */
function sandboxPid(info: Readable, child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    let text = "";
    const done = (err?: Error, pid?: number) => {
      clearTimeout(timer);
      info.off("data", onData);
      info.off("end", onEnd);
      child.off("exit", onExit);
      if (err) reject(err);
      else resolve(pid!);
    };
    // Read to the end: bubblewrap closes the descriptor only once the sandbox's namespaces
    // are set up (its uid map written); slirp4netns joining them before that is refused.
    const onData = (chunk: Buffer) => {
      text += chunk.toString("utf8");
    };
    const onEnd = () => {
      const pid = /"child-pid"\s*:\s*(\d+)/.exec(text)?.[1];
      if (pid) done(undefined, Number(pid));
      else done(new SandboxNetworkError(`bubblewrap reported no sandbox pid: ${text.slice(0, 200) || "(nothing)"}`));
    };
    const onExit = () => done(new SandboxNetworkError("bubblewrap exited before its sandbox was set up"));
    const timer = setTimeout(
      () => done(new SandboxNetworkError(`bubblewrap did not report its sandbox within ${NETWORK_SETUP_MS / 1000}s`)),
      NETWORK_SETUP_MS,
    );
    info.on("data", onData);
    info.once("end", onEnd);
    child.once("exit", onExit);
  });
}

function slirpReady(slirp: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let stderr = "";
    slirp.stderr!.on("data", (d: Buffer) => (stderr = (stderr + d.toString("utf8")).slice(-2000)));
    const why = () => stderr.trim().split("\n").slice(-3).join("; ") || "no output";
    const done = (err?: Error) => {
      clearTimeout(timer);
      slirp.off("exit", onExit);
      slirp.off("error", onError);
      if (err) reject(err);
      else resolve();
    };
    const onExit = (code: number | null) =>
      done(new SandboxNetworkError(`slirp4netns exited (code ${code}) before the network was up: ${why()}`));
    const onError = (err: Error) => done(new SandboxNetworkError(`slirp4netns could not be started: ${err.message}`));
    const timer = setTimeout(
      () => done(new SandboxNetworkError(`slirp4netns did not bring the network up within ${NETWORK_SETUP_MS / 1000}s: ${why()}`)),
      NETWORK_SETUP_MS,
    );
    (slirp.stdio[INFO_FD] as Readable).once("data", () => done());
    slirp.once("exit", onExit);
    slirp.once("error", onError);
  });
}
