/**
 * `buzz-bridge doctor [-c FILE]`: a live self-check of everything `run` needs — config,
 * relay, NIP-42 auth, channels, agent, MCP servers, proxy tool names — printed as a
 * table of ✓/✗ with the reason. Exit 0 when all pass, 1 on any ✗ (or a bad config,
 * whose errors are listed). The checks themselves are in ./doctor.ts.
 */
import { parseCommandArgs, UsageError, withUsage } from "../../base/args.js";
import { ConfigError, loadConfig, loadTeam, resolveConfigPath, type LoadedConfig } from "../../config/load.js";
import { serviceFor, type StateDirSource } from "../doctor/doctor-service.js";
import { parseDuration } from "../../config/duration.js";
import { npub } from "../../config/keys.js";
import { dirname, join, resolve } from "node:path";

const HELP = `usage: buzz-bridge doctor [-c FILE] [--timeout 15s] [--state-dir DIR]

Live self-check: config valid, state_dir writable by this user (and whether a daemon
holds its lock), relay reachable, NIP-42 auth accepted, channels found (name, UUID and
description), agent command starts and answers ACP initialize (and offers agent.mode);
with agent.preset also: the agent installed (and its version), its key set, and the
bridge's tools as the agent offers them to its model (run against a probe model on
127.0.0.1; a tool search or a dropped MCP server is a ✗ with the fix, docs/agents.md),
agent.cwd writable, the agent sandbox runs once and shows what an agent can and cannot
reach, each MCP server starts and lists its tools, proxy tool names valid.
Prints ✓/✗ per check with the reason; exit 0 when all pass, 1 otherwise.
With relay.url: embedded the development relay is started as the daemon would.
--timeout bounds each check (default 15s).
--state-dir DIR checks DIR as the state directory. Without it, a config that leaves
state_dir to the service is checked with the StateDirectory= of the installed systemd unit
that runs it (so doctor as root sees the service's state); doctor never creates it.
Config: -c FILE, else $BUZZ_BRIDGE_CONFIG, else ./buzz-bridge.yaml.`;

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    const args = parseCommandArgs(
      argv,
      { config: { type: "string", short: "c" }, timeout: { type: "string" }, "state-dir": { type: "string" } },
      HELP,
    );
    if (!args) return 0;
    let timeoutMs: number | undefined;
    if (args.values.timeout !== undefined) {
      const t = parseDuration(String(args.values.timeout));
      if (!t) throw new UsageError(`--timeout: bad duration ${JSON.stringify(args.values.timeout)}; write it as 15s or 1m\n\n${HELP}`);
      timeoutMs = t;
    }
    const file = resolveConfigPath(args.values.config as string | undefined);
    let loaded: LoadedConfig[];
    let stateFrom: StateDirSource | undefined;
    try {
      ({ loaded, from: stateFrom } = loadForDoctor(file, args.values["state-dir"] as string | undefined));
    } catch (err) {
      if (err instanceof ConfigError) {
        const n = err.problems.length;
        const what =
          n === 1 && err.problems[0]!.message.startsWith("cannot read config")
            ? "cannot be read"
            : `is invalid (${n} error${n === 1 ? "" : "s"})`;
        process.stdout.write(`✗ config  ${file} ${what}; fix this and run doctor again:\n`);
        for (const p of err.message.split("\n")) process.stdout.write(`          ${p}\n`);
        return 1;
      }
      throw err;
    }
    // Loaded only now: a bad config is reported without paying for the daemon's imports.
    const { formatResults, runDoctor } = await import("../doctor/doctor.js");
    let failed = false;
    // A team: each agent checked in turn, under its own heading.
    for (const one of loaded) {
      if (one.team)
        process.stdout.write(`${one.team.index ? "\n" : ""}agent ${one.team.id} (${npub(one.pubkey)}), agents[${one.team.index}]\n`);
      const results = await runDoctor(one, { timeoutMs, stateFrom });
      process.stdout.write(formatResults(results));
      failed ||= results.some((r) => r.mark === "fail");
    }
    return failed ? 1 : 0;
  });
}

/**
 * The config as the daemon would run it. A config that leaves `state_dir` to its service
 * gets the directory the service gets: `--state-dir`, else `$STATE_DIRECTORY` (doctor run
 * inside the service), else the `StateDirectory=` of the installed unit that runs this config.
 */
function loadForDoctor(file: string, flag: string | undefined): { loaded: LoadedConfig[]; from?: StateDirSource } {
  const team = loadTeam(file, flag === undefined ? process.env : { ...process.env, STATE_DIRECTORY: resolve(flag) });
  // A team's state_dir is the config's (or --state-dir when it names none); each agent's is under it.
  if (team.members[0]!.team) return { loaded: team.members, from: flag === undefined ? undefined : { flag: resolve(flag) } };
  const one = placeOne(file, flag, team.members[0]!);
  return { loaded: [one.loaded], from: one.from };
}

/** A config of one agent (`loaded`, read with `--state-dir` as $STATE_DIRECTORY when given) put where its service runs it. */
function placeOne(file: string, flag: string | undefined, loaded: LoadedConfig): { loaded: LoadedConfig; from?: StateDirSource } {
  if (flag !== undefined) {
    const dir = resolve(flag);
    if (loaded.config.state_dir !== dir) {
      // The config names its own state_dir: --state-dir still wins, and the default work dirs move along.
      const defaultCwd = join(loaded.config.state_dir, "work", "{channel}");
      if (loaded.config.agent.cwd === defaultCwd) loaded.config.agent.cwd = join(dir, "work", "{channel}");
      loaded.config.state_dir = dir;
    }
    return { loaded, from: { flag: dir } };
  }
  const besideConfig = join(dirname(resolve(file)), "buzz-bridge-state");
  if (process.env.STATE_DIRECTORY || loaded.config.state_dir !== besideConfig) return { loaded };
  const unit = serviceFor(file);
  if (!unit) return { loaded };
  return {
    loaded: loadConfig(file, { ...process.env, STATE_DIRECTORY: unit.stateDir }),
    from: { unit: unit.unit, stateDirectory: unit.stateDirectory },
  };
}
