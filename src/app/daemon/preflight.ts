/**
 * What `run` needs of the machine before it starts, worded once for both `run` (which
 * refuses to start, exit 2) and `doctor` (which prints ✗): the agent command can be found
 * and executed, and `state_dir` and the agent's work area can be written by this user.
 * Each check returns undefined when fine, else one line saying what is wrong and what to do.
 */
import { accessSync, constants, mkdirSync, statSync } from "node:fs";
import { userInfo } from "node:os";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import { CHANNEL_PLACEHOLDER } from "../../agent/cwd.js";
import { agentEnvironment } from "../../agent/env.js";
import { resolveAgentCommand } from "../../config/agent-command.js";
import type { Config } from "../../config/schema.js";
import { checkTrust } from "../../config/file-trust.js";

/** The state directory cannot be made or used (permissions, a file in the way). */
class StateDirError extends Error {
  override name = "StateDirError";
}

/** Something `run` needs is missing (the agent command, a writable work area): the same words `doctor` prints. */
class PreflightError extends Error {
  override name = "PreflightError";
}

/**
 * `run`: makes `state_dir` (mode 0700) and refuses to go on when this user cannot use it,
 * or when another user could change it (file-trust.ts: owned by someone else, writable by
 * group or others). Returns warnings to log (a group-writable directory above it).
 */
export function prepareStateDir(dir: string): string[] {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new StateDirError(`cannot create state_dir ${dir}: ${(err as Error).message}`, { cause: err });
  }
  const problem = stateDirProblem(dir);
  if (problem) throw new StateDirError(problem);
  const trust = checkTrust(dir, "state_dir");
  if (trust.refused) throw new StateDirError(trust.refused);
  return trust.warnings;
}

/** `run`: refuses to start with an agent that cannot run here, worded as `doctor` words it. */
export function preflightAgent(agent: Config["agent"], secret: Uint8Array): void {
  const { command } = resolveAgentCommand(agent);
  const env = agentEnvironment({ configured: agent.env, secret }).env;
  const problem = agentCommandProblem(command, env.PATH ?? process.env.PATH ?? "") ?? agentCwdProblem(agent.cwd);
  if (problem) throw new PreflightError(problem);
}

/** "uid 65534 (nobody)": who would need the permission. */
function whoAmI(): string {
  const uid = process.getuid?.();
  let name: string | undefined;
  try {
    name = userInfo().username;
  } catch {
    /* a uid without a passwd entry (containers) */
  }
  return uid === undefined ? (name ?? "this user") : `uid ${uid}${name ? ` (${name})` : ""}`;
}

const code = (err: unknown) => (err as NodeJS.ErrnoException).code ?? (err as Error).message;

/**
 * Why `dir` (to be created if missing) cannot be written, or undefined. `what` names the
 * config key for the message. Nothing is created: `doctor` may run as another user.
 */
function writableDirProblem(dir: string, what: string, fix: string): string | undefined {
  let existing = dir;
  for (;;) {
    try {
      const st = statSync(existing);
      if (!st.isDirectory()) {
        return existing === dir
          ? `${what} ${dir} is not a directory; ${fix}`
          : `cannot create ${what} ${dir}: ENOTDIR (${existing} is a file); ${fix}`;
      }
      break;
    } catch (err) {
      if (code(err) !== "ENOENT" && code(err) !== "ENOTDIR") return `cannot use ${what} ${dir}: ${code(err)}; ${fix}`;
      const up = dirname(existing);
      if (up === existing) return `cannot create ${what} ${dir}: nothing of its path exists`;
      existing = up;
    }
  }
  try {
    accessSync(existing, constants.W_OK | constants.X_OK);
    return undefined;
  } catch (err) {
    const where = existing === dir ? `${what} ${dir} is not writable` : `cannot create ${what} ${dir}: ${existing} is not writable`;
    const why = code(err) === "EROFS" ? "EROFS, a read-only file system" : code(err);
    return `${where} by ${whoAmI()} (${why}); ${fix}`;
  }
}

/**
 * Why `run` could not use `dir` as its state directory, or undefined. Who owns it is left to
 * `run` (prepareStateDir): `doctor` may look as another user than the daemon's.
 */
export function stateDirProblem(dir: string): string | undefined {
  return (
    writableDirProblem(
      dir,
      "state_dir",
      "set state_dir to a directory this user owns (the systemd unit's StateDirectory and the image's volume provide /var/lib/buzz-bridge)",
    ) ?? checkTrust(dir, "state_dir", { ownerMatters: false }).refused
  );
}

/** The directory the agent's per-channel work dirs are made in: agent.cwd up to `{channel}`. */
export function agentCwdBase(template: string): string {
  const i = template.indexOf(CHANNEL_PLACEHOLDER);
  if (i < 0) return resolve(template);
  const head = template.slice(0, i);
  return resolve(head.endsWith("/") || head === "" ? head || "." : dirname(head));
}

export function agentCwdProblem(template: string): string | undefined {
  return writableDirProblem(
    agentCwdBase(template),
    "agent.cwd",
    "set agent.cwd to a directory this user can write (or create it and chown it to this user)",
  );
}

/** Why `command` cannot be started, or undefined when it looks runnable. */
export function agentCommandProblem(command: string, path: string): string | undefined {
  if (command.includes("/")) {
    const full = resolve(command);
    try {
      if (!statSync(full).isFile()) return `agent command '${command}' is not a file`;
      accessSync(full, constants.X_OK);
      return undefined;
    } catch (err) {
      return code(err) === "EACCES"
        ? `agent command '${command}' is not executable (chmod +x?)`
        : `agent command '${command}' does not exist; install it or fix agent.command`;
    }
  }
  for (const dir of path.split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    try {
      const full = join(dir, command);
      if (statSync(full).isFile()) {
        accessSync(full, constants.X_OK);
        return undefined;
      }
    } catch {
      /* not here */
    }
  }
  return `agent command '${command}' not found on PATH; install it or set agent.command to its full path`;
}
