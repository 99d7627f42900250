/**
 * V8 memory settings for the daemon (`buzz-bridge run`), applied from inside the process
 * before the daemon's modules load. Both are read by V8 each time it resizes its heap, so
 * unlike `--max-semi-space-size` they can be set here, and they apply however the daemon
 * is started: the `buzz-bridge` bin, `node dist/cli.js run` in the systemd unit or the
 * container, with no wrapper process and no NODE_OPTIONS to leak into agents.
 *
 * - The young generation stays at its starting size (two 1 MiB semi-spaces). V8 doubles
 *   it whenever enough objects survive a scavenge, up to two 16 MiB semi-spaces, and never
 *   gives the room back; the daemon's start-up (loading its modules, joining hundreds of
 *   channels) is such a burst, so an idle daemon kept 32 MiB it no longer used.
 * - The old generation may grow by 20% of what is live before the next full collection,
 *   instead of V8's dynamic 1.1–4×: the garbage of start-up is collected rather than kept
 *   until a much larger limit is reached, which on an idle daemon may be never.
 *
 * The price is more frequent collections under load; bench figure 6 reports the daemon's
 * CPU with them and bench/README.md (figure 7) says where the idle RSS goes.
 *
 * On the command line V8 raises a growth factor below 2 to 2 (flag implications run once,
 * when node starts); set at run time it is honoured by Node 20's V8, and a growth factor
 * of 1 only means "do not grow". test/ops-v8-memory.test.ts checks the young generation of
 * a running daemon, so a V8 that stops honouring it fails there rather than silently.
 */
import { setFlagsFromString } from "node:v8";

/** One setting: the flag we apply, and the flags by which a user already chose it. */
interface Setting {
  flag: string;
  chosenBy: RegExp;
}

const DAEMON_V8_SETTINGS: readonly Setting[] = [
  { flag: "--semi-space-growth-factor=1", chosenBy: /^--(?:(?:max|min)[-_]semi[-_]space[-_]size|semi[-_]space[-_]growth[-_]factor)\b/ },
  { flag: "--heap-growing-percent=20", chosenBy: /^--heap[-_]growing[-_]percent\b/ },
];

/**
 * The settings to apply: each one unless whoever started node chose it themselves (on the
 * command line or in NODE_OPTIONS), e.g. `--max-semi-space-size=16` to trade memory for CPU
 * on a very busy bridge.
 */
export function daemonV8Flags(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const given = [...execArgv, ...(nodeOptions ?? "").split(/\s+/)];
  return DAEMON_V8_SETTINGS.filter((s) => !given.some((a) => s.chosenBy.test(a))).map((s) => s.flag);
}

/** Applies the daemon's settings; returns the flags applied. */
export function applyDaemonV8Settings(execArgv: readonly string[] = process.execArgv, nodeOptions = process.env.NODE_OPTIONS): string[] {
  const flags = daemonV8Flags(execArgv, nodeOptions);
  for (const f of flags) setFlagsFromString(f);
  return flags;
}
