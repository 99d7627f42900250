/**
 * The one rule for paths in a config file: a relative path is relative to the directory
 * of the config file that names it, for every path key (state_dir, agent.cwd,
 * mcp.servers.*.cwd, relay.seed, identity.secret_key_file here; identity.auth_tag_file,
 * heartbeat.prompt_file and agent.sandbox_binds[].path where load.ts reads them, against the
 * same directory). Where the
 * daemon is started from never matters.
 *
 * The defaults are chosen to be writable where the shipped recipes put the config on a
 * read-only path (/etc/buzz-bridge under systemd's ProtectSystem=strict, a `:ro` mount in
 * Docker): `state_dir` is `$STATE_DIRECTORY` when set — systemd sets it for
 * `StateDirectory=`, the image sets it to its volume — else `buzz-bridge-state` beside
 * the config (a checkout, a home directory); `agent.cwd` is `work/{channel}` inside
 * state_dir.
 */
import { delimiter, join, resolve } from "node:path";

/** The directory systemd (StateDirectory=) or the image (ENV) gives the service for its state. */
function providedStateDir(env: NodeJS.ProcessEnv): string | undefined {
  // systemd joins several StateDirectory= entries with ':'; the first is the service's own.
  const first = env.STATE_DIRECTORY?.split(delimiter)[0]?.trim();
  return first ? resolve(first) : undefined;
}

const DEFAULT_STATE_DIR = "buzz-bridge-state";
const DEFAULT_WORK_DIR = join("work", "{channel}");

export interface PathKeys {
  state_dir?: string;
  relay: { seed?: string };
  identity: { secret_key_file?: string };
  agent: { cwd?: string };
  mcp: { servers: Record<string, { cwd?: string }> };
}

/** Applies the rule in place; returns the effective state_dir and agent.cwd. */
export function resolvePaths<T extends PathKeys>(
  config: T,
  configFile: string,
  env: NodeJS.ProcessEnv,
): T & { state_dir: string; agent: { cwd: string } } {
  const base = resolve(configFile, "..");
  const stateDir =
    config.state_dir !== undefined ? resolve(base, config.state_dir) : (providedStateDir(env) ?? resolve(base, DEFAULT_STATE_DIR));
  config.state_dir = stateDir;
  config.agent.cwd = config.agent.cwd !== undefined ? resolve(base, config.agent.cwd) : join(stateDir, DEFAULT_WORK_DIR);
  if (config.relay.seed !== undefined) config.relay.seed = resolve(base, config.relay.seed);
  if (config.identity.secret_key_file !== undefined) config.identity.secret_key_file = resolve(base, config.identity.secret_key_file);
  for (const server of Object.values(config.mcp.servers)) {
    if (server.cwd !== undefined) server.cwd = resolve(base, server.cwd);
  }
  return config as T & { state_dir: string; agent: { cwd: string } };
}
