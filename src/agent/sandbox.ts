/**
 * The agent sandbox (bubblewrap): what an agent process, and everything it starts (the
 * MCP proxy, its servers, shells), can reach. The filesystem is the host's, read-only, so
 * an agent and its toolchain run from wherever they are installed; on top of it:
 *
 *   - the channel's working directory and the channel's own HOME, read-write;
 *   - the process's own link directory (its session's link socket), read-only;
 *   - `agent.sandbox_binds`, read-only or read-write as configured;
 *   - a private /tmp, a minimal /dev, and a /proc of its own pid namespace;
 *   - hidden (an empty, read-only directory in their place): every path the bridge's
 *     configuration names for itself — the key file, the config file, the state
 *     directory, the directory holding the channels' working directories — and the
 *     directories holding them when they hold nothing else. A hidden file beside other
 *     files is covered by an unreadable placeholder;
 *   - a network namespace of its own: with `agent.network: off` an empty one (loopback
 *     only); with `on`, one that slirp4netns connects outwards with the host's loopback
 *     out of reach (sandbox-net.ts), the resolver being slirp4netns's (a generated
 *     /etc/resolv.conf); only where slirp4netns is missing (and `agent.sandbox: auto`)
 *     the host's network, loopback included.
 *
 * Every bubblewrap argument is built here, in one place; the pool only prefixes the
 * agent command with them.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, realpathSync, writeFileSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import { retry } from "../base/retry.js";
import { BLOCK_FD, INFO_FD } from "./sandbox-net.js";

export type SandboxMode = "auto" | "bubblewrap" | "off";
export type NetworkMode = "on" | "off";
export interface SandboxBind {
  path: string;
  mode: "ro" | "rw";
}

/** A channel may only make these stricter than `agent.*`: off < auto < bubblewrap, on < off. */
export const SANDBOX_STRICTNESS: Record<SandboxMode, number> = { off: 0, auto: 1, bubblewrap: 2 };
export const NETWORK_STRICTNESS: Record<NetworkMode, number> = { on: 0, off: 1 };

/** What to install or enable when bubblewrap cannot run; shown at start and by doctor. */
export const BUBBLEWRAP_ADVICE =
  "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) and allow unprivileged user namespaces " +
  "(sysctl user.max_user_namespaces > 0; kernel.unprivileged_userns_clone=1 where it exists; " +
  "under Docker: --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined), " +
  "or set agent.sandbox: off";

export type BubblewrapProbe = { ok: true; path: string; version: string } | { ok: false; reason: string };

/**
 * The namespaces every sandbox gets; the probe uses the same ones, so a pass means agents
 * start (the systemd unit's RestrictNamespaces= allows exactly these, and net for
 * agent.network: off). No capabilities, also when the daemon runs as root: with CAP_SYS_ADMIN in its
 * user namespace an agent could unmount what hides the bridge's files, and with
 * CAP_DAC_OVERRIDE read the unreadable placeholder.
 */
const NAMESPACE_ARGS = ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL"];
const BASE_MOUNTS = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"];

/**
 * Whether a process's stderr is bubblewrap's own failure to set up the sandbox (its lines
 * start "bwrap: "), before the command inside ran. Its network namespace's loopback setup
 * fails now and then under load (`bwrap: loopback: Failed RTM_NEWADDR`, with whatever errno
 * was left over, often "No child processes"): bubblewrap takes the kernel's answer for
 * someone else's when its netlink socket was given another port id than its pid, which the
 * kernel does when it is busy. It passes with time: see retrySandboxSetup.
 */
function sandboxSetupFailed(stderr: string): boolean {
  return /^bwrap: /m.test(stderr);
}

/**
 * Tries for a sandbox whose setup failed (sandboxSetupFailed), the first included: 5, with
 * pauses of 250 ms doubling to 2 s (±20 %, so that sandboxes failing together do not come
 * back together), 3.75 s at most. A loaded machine fails several setups in a row in a burst
 * (three within 1.7 s were seen beside a second copy of the test suite); counted as failures
 * to start, three such opened the agent circuit breaker for five minutes.
 */
export const SANDBOX_SETUP_RETRY = { attempts: 5, backoff: { baseMs: 250, capMs: 2000, jitter: 0.2 } } as const;

/**
 * Runs `launch` (something run in a sandbox) and tries it again while it fails with
 * bubblewrap's own setup error: for an agent's start, the attachment reader and doctor's
 * sandbox check alike. `stderrOf` finds a failure's stderr (undefined: not a process
 * failure, never tried again); `stop` ends the tries (a pool closing); `onRetry` is told
 * of each failure that is tried again, and the pause before it.
 */
export function retrySandboxSetup<T>(
  launch: () => Promise<T>,
  o: {
    stderrOf(err: unknown): string | undefined;
    stop?(): boolean;
    onRetry?(attempt: number, err: unknown, delayMs: number): void;
  },
): Promise<T> {
  return retry(launch, {
    ...SANDBOX_SETUP_RETRY,
    retryable: (err) => sandboxSetupFailed(o.stderrOf(err) ?? "") && !o.stop?.(),
    onRetry: o.onRetry,
  });
}

/** Runs bubblewrap once with the sandbox's namespaces: installed, and allowed by the kernel? */
export function probeBubblewrap(bwrap = "bwrap", env: NodeJS.ProcessEnv = process.env): BubblewrapProbe {
  const version = spawnSync(bwrap, ["--version"], { encoding: "utf8", env, timeout: 10_000 });
  if (version.error) {
    const code = (version.error as NodeJS.ErrnoException).code;
    return {
      ok: false,
      reason: code === "ENOENT" ? `bubblewrap (${bwrap}) is not installed` : `bubblewrap (${bwrap}) cannot run: ${version.error.message}`,
    };
  }
  const run = spawnSync(bwrap, [...NAMESPACE_ARGS, ...BASE_MOUNTS, "--tmpfs", "/tmp", "--", "true"], {
    encoding: "utf8",
    env,
    timeout: 10_000,
  });
  if (run.status !== 0) {
    const why = (run.stderr || run.error?.message || `exit ${run.status ?? run.signal}`).trim().split("\n")[0];
    return { ok: false, reason: `the kernel refused bubblewrap's sandbox (${why})` };
  }
  return { ok: true, path: bwrap, version: version.stdout.trim() };
}

/** What one sandboxed process is given; paths are absolute. */
export interface SandboxSpec {
  /** The channel's working directory: read-write, and the process's cwd. */
  cwd: string;
  /** The channel's HOME: read-write. */
  home: string;
  /** The process's link directory (its session's socket): read-only. */
  linkDir?: string;
  /** Paths to hide (see hiddenPaths). */
  hide: string[];
  /** Unreadable file laid over hidden files that share a directory with others. */
  placeholder: string;
  binds: SandboxBind[];
  /** none: loopback only; private: a namespace slirp4netns connects outwards; host: the host's network. */
  network: SandboxNetwork;
  /** With `private`: the resolv.conf naming slirp4netns's DNS, laid over /etc/resolv.conf. */
  resolvConf?: string;
  /** With `private`: the directory of the daemon's loopback relay sockets (loopback.ts), read-only. */
  loopbackDir?: string;
  /** The process's starting directory; default `cwd`. */
  chdir?: string;
}

export type SandboxNetwork = "none" | "private" | "host";

const depth = (p: string) => (p === sep ? 0 : p.split(sep).length - 1);
const under = (p: string, dir: string) => p === dir || p.startsWith(dir.endsWith(sep) ? dir : dir + sep);

function real(p: string): string | undefined {
  try {
    return realpathSync(p);
  } catch {
    return undefined; // not there (yet): nothing to hide
  }
}

/**
 * The paths to hide, resolved: each existing named path, widened to its directory while
 * that directory holds nothing else (a key file alone in /etc/buzz-bridge hides the
 * directory), never up to `/` nor to a directory that is itself bound in (`keep`: hiding it
 * would be undone by the bind); paths inside another hidden one are dropped.
 */
export function hiddenPaths(named: string[], keep: string[] = []): string[] {
  const kept = new Set(keep.map(real).filter((p): p is string => p !== undefined));
  const set = new Set(named.map(real).filter((p): p is string => p !== undefined && p !== sep));
  for (let widened = true; widened; ) {
    widened = false;
    for (const p of [...set]) {
      const parent = dirname(p);
      if (parent === p || parent === sep || set.has(parent) || kept.has(parent)) continue;
      let entries: string[];
      try {
        entries = readdirSync(parent);
      } catch {
        continue;
      }
      if (entries.length > 0 && entries.every((e) => set.has(join(parent, e)))) {
        set.add(parent);
        widened = true;
      }
    }
  }
  const all = [...set];
  return all.filter((p) => !all.some((q) => q !== p && under(p, q))).sort();
}

interface Mount {
  at: string;
  args: string[];
  /** Hidden directories are made read-only once everything beneath them is mounted. */
  readOnlyAfter?: boolean;
}

/** bubblewrap's arguments for one process, up to and including `--`. */
export function bubblewrapArgs(spec: SandboxSpec): string[] {
  const mounts: Mount[] = [{ at: "/tmp", args: ["--tmpfs", "/tmp"] }];
  for (const p of spec.hide) {
    // Already private there, unless a bind shows that part of the host again.
    const reshown = spec.binds.some((b) => under(p, b.path));
    if (!reshown && (under(p, "/tmp") || under(p, "/proc") || under(p, "/dev"))) continue;
    let dir = false;
    try {
      dir = readdirSync(p) !== undefined;
    } catch {
      dir = false;
    }
    mounts.push(dir ? { at: p, args: ["--tmpfs", p], readOnlyAfter: true } : { at: p, args: ["--ro-bind", spec.placeholder, p] });
  }
  const bind = (path: string, rw: boolean) => mounts.push({ at: path, args: [rw ? "--bind" : "--ro-bind", path, path] });
  for (const b of spec.binds) bind(b.path, b.mode === "rw");
  bind(spec.home, true);
  bind(spec.cwd, true);
  if (spec.linkDir) bind(spec.linkDir, false);
  if (spec.network === "private" && spec.loopbackDir) bind(spec.loopbackDir, false);
  // Parents before children; at one path, a bind (listed later) wins over a hide.
  const ordered = mounts
    .map((m, i) => ({ m, i }))
    .sort((a, b) => depth(a.m.at) - depth(b.m.at) || a.i - b.i)
    .map((x) => x.m);
  const own = spec.network !== "host";
  const resolv = spec.network === "private" && spec.resolvConf ? ["--ro-bind", spec.resolvConf, "/etc/resolv.conf"] : [];
  // sandbox-net.ts reads the sandbox's pid on INFO_FD and lets it run by writing to BLOCK_FD.
  const handshake = spec.network === "private" ? ["--info-fd", String(INFO_FD), "--block-fd", String(BLOCK_FD)] : [];
  return [
    ...NAMESPACE_ARGS,
    ...(own ? ["--unshare-net"] : []),
    ...BASE_MOUNTS,
    ...ordered.flatMap((m) => m.args),
    ...ordered.filter((m) => m.readOnlyAfter).flatMap((m) => ["--remount-ro", m.at]),
    ...resolv,
    ...handshake,
    "--chdir",
    spec.chdir ?? spec.cwd,
    "--",
  ];
}

/** The unreadable placeholder file (mode 000), created once under the state directory. */
export function ensurePlaceholder(path: string): string {
  if (!existsSync(path)) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    writeFileSync(path, "", { mode: 0o000 });
  }
  chmodSync(path, 0o000);
  return path;
}

/** The executable `command` names: itself when it holds a slash, else the first match on PATH. */
export function resolveCommand(command: string, path: string): string | undefined {
  if (command.includes(sep)) return real(command);
  for (const dir of path.split(":")) {
    if (!dir) continue;
    const p = real(join(dir, command));
    if (p) return p;
  }
  return undefined;
}

/** The hidden path that holds `file`, unless a bind shows it again. */
export function hiddenBy(file: string, hide: string[], binds: SandboxBind[]): string | undefined {
  if (binds.some((b) => under(file, b.path))) return undefined;
  return hide.find((h) => under(file, h));
}
