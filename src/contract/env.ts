/**
 * What a child process of the bridge inherits from its parent's environment: the agent
 * (agent/env.ts, from the daemon) and each downstream MCP server (proxy/env.ts, from the
 * proxy) start from an allow-list of plain OS settings, never a secret. The lists live here
 * together so a setting added for one child is a decision about the other too.
 */
import { LINK_ENV, LINK_TOKEN_ENV } from "./proxy-entry.js";

/** What every child inherits when present: enough for shells, locale-aware tools and Node's TLS. */
const OS_ENV = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "TZ", "NODE_EXTRA_CA_CERTS"];

/**
 * The agent's allow-list. Agents talk to model APIs: a proxy setting or CA bundle of the host
 * is an OS setting, not a secret. Any `XDG_` variable (see AGENT_INHERITED_PREFIXES).
 */
export const AGENT_INHERITED_ENV: ReadonlySet<string> = new Set([
  ...OS_ENV,
  "LC_MESSAGES",
  "TMP",
  "TEMP",
  "COLORTERM",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "no_proxy",
]);
export const AGENT_INHERITED_PREFIXES = ["XDG_"];

/**
 * A downstream server's allow-list. Servers run tools such as git over ssh: the ssh agent and
 * git's credential settings, the XDG base directories, and Windows' SYSTEMROOT.
 */
export const SERVER_INHERITED_ENV: readonly string[] = [
  ...OS_ENV,
  "XDG_CONFIG_HOME",
  "XDG_CACHE_HOME",
  "XDG_DATA_HOME",
  "XDG_RUNTIME_DIR",
  "SSH_AUTH_SOCK",
  "SSH_AGENT_PID",
  "GIT_ASKPASS",
  "GIT_SSH_COMMAND",
  "GIT_CONFIG_GLOBAL",
  "SYSTEMROOT",
];

/** Variable names that hold a Nostr secret by convention; passed to no child, whatever the source. */
export const SECRET_ENV_NAMES: readonly string[] = ["BUZZ_PRIVATE_KEY", "NOSTR_PRIVATE_KEY"];

/** Never handed to a downstream server, whatever its config says: the secret, and the link to the daemon. */
export const SERVER_FORBIDDEN_ENV: ReadonlySet<string> = new Set([...SECRET_ENV_NAMES, LINK_ENV, LINK_TOKEN_ENV]);
