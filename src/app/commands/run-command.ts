/**
 * `buzz-bridge run [-c FILE]`: the daemon. SIGTERM/SIGINT stop it gracefully (exit 0),
 * SIGHUP reloads the config, `!shutdown` from the owner stops it like SIGTERM.
 * Exit 1 for a config error, 2 for a runtime failure: a crash (logged as `daemon.crashed`,
 * crash-log.ts), or a start refused (relay unreachable is not one: the daemon keeps
 * reconnecting, also at start-up; a stop signal then exits 0).
 */
import { parseCommandArgs, withUsage } from "../../base/args.js";
import { loadTeamOrReport, resolveConfigPath, teamWarnings } from "../../config/load.js";
import { createLogger } from "../../base/log.js";
import { Daemon } from "../daemon/daemon.js";
import { Team } from "../daemon/team.js";
import { StartAbortedError } from "../daemon/start-waits.js";
import { StateLockedError } from "../daemon/state-lock.js";
import { InstanceConflictError } from "../../buzz/instance.js";
import { logCrashes } from "./crash-log.js";

const HELP = `usage: buzz-bridge run [-c FILE]

Runs the daemon. Config: -c FILE, else $BUZZ_BRIDGE_CONFIG, else ./buzz-bridge.yaml.
A config with agents: runs each listed agent in this one process (docs/configuration.md,
"Several agents in one daemon"); an owner's !shutdown then stops that agent alone.
Signals: SIGTERM/SIGINT stop gracefully (turns get shutdown_grace to finish; the rest
run again after restart), SIGHUP reloads the config.
Exit 1 on a config error; 2 when it crashed on an error nothing handled (log evt
daemon.crashed, with the stack), or when it cannot start: another daemon holds state_dir
(log evt state.locked, naming its pid), another daemon of the same identity runs elsewhere
(log evt instance.conflict, naming its host and pid) — also when one that started earlier
appears while this one runs: it stops with exit 2 so the service starts again and decides anew —, the agent command is not found, or state_dir or
agent.cwd is not writable by this user (the same words \`buzz-bridge doctor\` prints).`;

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    const args = parseCommandArgs(argv, { config: { type: "string", short: "c" } }, HELP);
    if (!args) return 0;
    const file = resolveConfigPath(args.values.config as string | undefined);
    const team = loadTeamOrReport(file);
    if (!team) return 1;
    const [loaded] = team.members;
    const log = createLogger({ level: loaded!.config.log.level, format: loaded!.config.log.format });
    for (const w of teamWarnings(team)) log.warn({ evt: "config.warning" }, w);
    // A config without agents: runs its one agent as it always has; with agents:, a team (docs/configuration.md).
    if (!loaded!.team) return runDaemon(new Daemon({ loaded: loaded!, logger: log, configFile: file }), log);
    return runDaemon(new Team({ team, logger: log, configFile: file }), log);
  });
}

/** Runs a daemon until a signal or `!shutdown`; shared with `demo --keep`. */
export async function runDaemon(daemon: Daemon | Team, log: ReturnType<typeof createLogger>): Promise<number> {
  let stopSignal: string | undefined;
  const onStop = (sig: string) => () => {
    if (stopSignal) return;
    stopSignal = sig;
    log.info({ evt: "daemon.signal", signal: sig }, "stop requested");
    daemon.abortStart();
    requestStop(sig);
  };
  let requestStop: (why: string) => void = () => undefined;
  const stopRequested = new Promise<string>((r) => (requestStop = r));
  const onTerm = onStop("SIGTERM");
  const onInt = onStop("SIGINT");
  const onHup = () => void daemon.reload();
  process.on("SIGTERM", onTerm);
  process.on("SIGINT", onInt);
  process.on("SIGHUP", onHup);
  const unhookCrashes = logCrashes(log);
  try {
    try {
      await daemon.start();
    } catch (err) {
      if (err instanceof StartAbortedError) {
        // Asked to stop while still waiting for the relay: a clean stop, not a failure.
        log.info({ evt: "daemon.shutdown", reason: stopSignal ?? "stop" }, "stopped during start-up");
        await daemon.stop();
        return 0;
      }
      if (err instanceof InstanceConflictError) {
        // instance.conflict was logged with the other daemon's host and pid.
        await daemon.stop().catch(() => undefined);
        return 2;
      }
      if (err instanceof StateLockedError) {
        log.fatal({ evt: "state.locked", state_dir: err.stateDir, holder_pid: err.holderPid }, err.message);
        await daemon.stop().catch(() => undefined);
        return 2;
      }
      const reason = err instanceof Error ? err.message : String(err);
      log.fatal({ evt: "daemon.start_failed", err: reason }, `could not start: ${reason}`);
      await daemon.stop().catch(() => undefined);
      return 2;
    }
    const why = await Promise.race([stopRequested, daemon instanceof Team ? daemon.ended : daemon.shutdownRequested]);
    log.info({ evt: "daemon.shutdown", reason: why }, "shutting down");
    await daemon.stop();
    // Giving way to another live instance is a failure to the service manager: under
    // Restart=on-failure the next start decides again (docs/operating.md).
    return why === "instance.conflict" ? 2 : 0;
  } finally {
    process.off("SIGTERM", onTerm);
    process.off("SIGINT", onInt);
    process.off("SIGHUP", onHup);
    unhookCrashes();
  }
}
