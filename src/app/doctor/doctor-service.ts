/**
 * What `doctor` learns about the service around a config: the systemd unit that runs it
 * (so `doctor` run by hand as root checks the state directory the service really uses,
 * `StateDirectory=`, instead of the default beside the config), and who a process holding
 * the state lock is (its command line and unit), read from /proc. Read-only: nothing here
 * creates, starts or signals anything.
 */
import { readdirSync, readFileSync, realpathSync } from "node:fs";
import { basename, join, resolve } from "node:path";

/** Where systemd looks for system units, most specific first. */
export const SYSTEMD_UNIT_DIRS = [
  "/etc/systemd/system",
  "/run/systemd/system",
  "/usr/local/lib/systemd/system",
  "/usr/lib/systemd/system",
  "/lib/systemd/system",
];

/** Where doctor's state directory came from, when not from the config or the environment. */
export type StateDirSource = { flag: string } | { unit: string; stateDirectory: string };

export interface ServiceUnit {
  /** The unit's file name, e.g. `buzz-bridge.service`. */
  unit: string;
  /** `/var/lib/<first StateDirectory= entry>`: the `$STATE_DIRECTORY` systemd gives the service. */
  stateDir: string;
  /** `StateDirectory=` as written. */
  stateDirectory: string;
  user?: string;
}

/** `key=value` lines of a unit file's [Service] section (later values win, as in systemd). */
function serviceKeys(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let inService = false;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";")) continue;
    const section = /^\[(\w+)\]$/.exec(line);
    if (section) {
      inService = section[1] === "Service";
      continue;
    }
    const eq = line.indexOf("=");
    if (!inService || eq <= 0) continue;
    const key = line.slice(0, eq).trim();
    out.set(key, [...(out.get(key) ?? []), line.slice(eq + 1).trim()]);
  }
  return out;
}

const same = (a: string, b: string) => {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return resolve(p);
    }
  };
  return real(a) === real(b);
};

/** The config file a unit runs the daemon with: `-c FILE` / `--config FILE` on `ExecStart=`, else `BUZZ_BRIDGE_CONFIG=` in `Environment=`. */
function configOf(keys: Map<string, string[]>): string | undefined {
  const exec = (keys.get("ExecStart") ?? []).find((e) => /\brun\b/.test(e) && /buzz-bridge|cli\.js/.test(e));
  if (!exec) return undefined;
  const flag = /(?:^|\s)(?:-c|--config)(?:\s+|=)(\S+)/.exec(exec);
  if (flag) return flag[1];
  for (const env of keys.get("Environment") ?? []) {
    const m = /(?:^|\s)"?BUZZ_BRIDGE_CONFIG=([^\s"]+)/.exec(env);
    if (m) return m[1];
  }
  return undefined;
}

/**
 * The installed (non-template) systemd unit that runs `buzz-bridge run` with `configFile`
 * and gives it a `StateDirectory=`, or undefined. Template units (`name@.service`) are left
 * out: which instance is meant cannot be told from the config alone.
 */
export function serviceFor(configFile: string, dirs: string[] = SYSTEMD_UNIT_DIRS): ServiceUnit | undefined {
  for (const dir of dirs) {
    let names: string[];
    try {
      names = readdirSync(dir).filter((n) => n.endsWith(".service") && !n.includes("@"));
    } catch {
      continue;
    }
    for (const name of names.sort()) {
      let text: string;
      try {
        text = readFileSync(join(dir, name), "utf8");
      } catch {
        continue;
      }
      const keys = serviceKeys(text);
      const runs = configOf(keys);
      const stateDirectory = keys.get("StateDirectory")?.at(-1)?.split(/\s+/)[0];
      if (!runs || !stateDirectory || !same(runs, configFile)) continue;
      return { unit: basename(name), stateDir: join("/var/lib", stateDirectory), stateDirectory, user: keys.get("User")?.at(-1) };
    }
  }
  return undefined;
}

/** `pid 1234 (buzz-bridge.service): node /opt/buzz-bridge/dist/cli.js run -c …`, as far as /proc tells. */
export function describeProcess(pid: number): string {
  let cmd = "";
  try {
    cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
  } catch {
    /* another user's process under ProtectProc, or gone */
  }
  let unit: string | undefined;
  try {
    unit = /\/system\.slice\/([^/\n]+\.service)/.exec(readFileSync(`/proc/${pid}/cgroup`, "utf8"))?.[1];
  } catch {
    /* no cgroup file: not Linux, or gone */
  }
  return `pid ${pid}${unit ? ` (${unit})` : ""}${cmd ? `: ${cmd}` : ""}`;
}
