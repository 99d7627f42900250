/**
 * `buzz-bridge doctor [-c FILE]`: a live self-check of everything `run` needs — config,
 * relay, NIP-42 auth, channels, agent, MCP servers, proxy tool names — printed as a
 * table of ✓/✗ with the reason. Exit 0 when all pass, 1 on any ✗ (or a bad config,
 * whose errors are listed). The checks themselves are in ./doctor.ts.
 */
import { parseCommandArgs, UsageError, withUsage } from "../../base/args.js";
import { ConfigError, loadConfig, resolveConfigPath } from "../../config/load.js";
import { parseDuration } from "../../config/duration.js";

const HELP = `usage: buzz-bridge doctor [-c FILE] [--timeout 15s]

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
Config: -c FILE, else $BUZZ_BRIDGE_CONFIG, else ./buzz-bridge.yaml.`;

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    const args = parseCommandArgs(argv, { config: { type: "string", short: "c" }, timeout: { type: "string" } }, HELP);
    if (!args) return 0;
    let timeoutMs: number | undefined;
    if (args.values.timeout !== undefined) {
      const t = parseDuration(String(args.values.timeout));
      if (!t) throw new UsageError(`--timeout: bad duration ${JSON.stringify(args.values.timeout)}; write it as 15s or 1m\n\n${HELP}`);
      timeoutMs = t;
    }
    const file = resolveConfigPath(args.values.config as string | undefined);
    let loaded;
    try {
      loaded = loadConfig(file);
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
    const results = await runDoctor(loaded, { timeoutMs });
    process.stdout.write(formatResults(results));
    return results.some((r) => r.mark === "fail") ? 1 : 0;
  });
}
