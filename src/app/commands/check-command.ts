/**
 * `buzz-bridge check [-c FILE]`: validates the config, prints the effective settings as
 * YAML with secrets shown as [redacted]; exit 0 valid, 1 invalid (every error listed).
 */
import { stringify } from "yaml";
import { parseCommandArgs, withUsage } from "../../base/args.js";
import { ConfigError, loadTeam, resolveConfigPath, teamWarnings } from "../../config/load.js";
import { DURATION_KEYS, SIZE_KEYS } from "../../config/schema.js";
import { formatDuration } from "../../config/duration.js";
import { formatSize } from "../../config/size.js";
import { npub } from "../../config/keys.js";
import { redactDatabaseUrl } from "../../base/log.js";

const HELP = `usage: buzz-bridge check [-c FILE]

Validates the configuration and prints the effective settings (defaults filled in,
secrets shown as [redacted]); for a config with agents:, one YAML document per agent.
Exit 0 when valid, 1 with every error as FILE:LINE:COL.
Config: -c FILE, else $BUZZ_BRIDGE_CONFIG, else ./buzz-bridge.yaml.`;

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    const args = parseCommandArgs(argv, { config: { type: "string", short: "c" } }, HELP);
    if (!args) return 0;
    const file = resolveConfigPath(args.values.config as string | undefined);
    try {
      const team = loadTeam(file);
      for (const w of teamWarnings(team)) process.stderr.write(`warning: ${w}\n`);
      const [one] = team.members;
      if (!one!.team) {
        process.stdout.write(`# ${file}: valid\n# agent pubkey: ${npub(one!.pubkey)} (${one!.pubkey})\n`);
        process.stdout.write(stringify(displayable(one!.config), { lineWidth: 0 }));
        return 0;
      }
      process.stdout.write(`# ${file}: valid; ${team.members.length} agents in one daemon, state_dir ${team.stateDir}\n`);
      for (const m of team.members) {
        process.stdout.write(`---\n# agents[${m.team!.index}]: agent ${m.team!.id}, pubkey ${npub(m.pubkey)} (${m.pubkey})\n`);
        process.stdout.write(stringify(displayable(m.config), { lineWidth: 0 }));
      }
      return 0;
    } catch (err) {
      if (err instanceof ConfigError) {
        process.stderr.write(`${err.message}\n${err.problems.length} error${err.problems.length === 1 ? "" : "s"} in ${file}\n`);
        return 1;
      }
      throw err;
    }
  });
}

/** Names of `env` entries that hold secrets. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASS|AUTH|CREDENTIAL/i;

/** Keys whose values are pubkeys: shown as npub, as people write them (the schema keeps hex for the wire). */
const PUBKEY_KEYS = new Set(["owner", "allow"]);

const asNpub = (v: unknown) => (typeof v === "string" && /^[0-9a-f]{64}$/.test(v) ? npub(v) : v);

/** The config as a person would write it: durations as 15m, pubkeys as npub, secrets redacted. */
export function displayable(value: unknown, key = "", parent = ""): unknown {
  if (key === "secret_key") return "[redacted]";
  if (PUBKEY_KEYS.has(key)) return Array.isArray(value) ? value.map(asNpub) : asNpub(value);
  if (parent === "state" && key === "url" && typeof value === "string") return redactDatabaseUrl(value);
  // env maps carry API keys and tokens: show that they are set, not what they are
  if (parent === "env" && typeof value === "string" && value !== "" && SECRET_NAME.test(key)) return "[redacted]";
  if (DURATION_KEYS.has(key) && typeof value === "number") return formatDuration(value);
  if (SIZE_KEYS.has(key) && typeof value === "number") return formatSize(value);
  if (Array.isArray(value)) return value.map((v) => displayable(v));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, displayable(v, k, key)]));
  }
  return value;
}
