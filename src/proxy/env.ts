/**
 * The environment a downstream MCP server gets: a safe allow-list of what the proxy
 * itself has (the agent may have cleared it) plus exactly the server's configured env.
 * Keys and the link token are never passed on, even if a server's env names them.
 */
import { LINK_ENV, LINK_TOKEN_ENV } from "../contract/proxy-entry.js";

/** Inherited when present; enough for shells, git and locale-aware tools to work. */
export const INHERITED_ENV = [
  "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "TZ",
  "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR",
  "SSH_AUTH_SOCK", "SSH_AGENT_PID", "GIT_ASKPASS", "GIT_SSH_COMMAND", "GIT_CONFIG_GLOBAL",
  "NODE_EXTRA_CA_CERTS", "SYSTEMROOT",
];

/** Never handed to a downstream server, whatever the config says. */
export const FORBIDDEN_ENV = new Set(["BUZZ_PRIVATE_KEY", "NOSTR_PRIVATE_KEY", LINK_ENV, LINK_TOKEN_ENV]);

export function downstreamEnv(configured: Record<string, string>, parent: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of INHERITED_ENV) {
    const v = parent[key];
    if (v !== undefined) env[key] = v;
  }
  for (const [k, v] of Object.entries(configured)) if (!FORBIDDEN_ENV.has(k)) env[k] = v;
  return env;
}
