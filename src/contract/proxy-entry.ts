/**
 * How the daemon and its per-session MCP proxy find each other: the proxy's entry name in
 * `session/new` `mcpServers`, the subcommand that runs it, and the env vars that carry the
 * link's address and token. Part of the daemon↔proxy contract (docs/architecture.md §2);
 * imports nothing, so the CLI can use it without loading the proxy.
 */

/** The name of the proxy's entry in `mcpServers`; agents prefix tools with it (`mcp__buzz__…`). */
export const PROXY_SERVER_NAME = "buzz";
/** The `buzz-bridge` subcommand that runs the proxy on stdio. */
export const PROXY_SUBCOMMAND = "mcp-proxy";
/** Env var with the link's unix socket path, set by the daemon on the proxy entry. */
export const LINK_ENV = "BUZZ_BRIDGE_LINK";
/** Env var with the session's capability token. */
export const LINK_TOKEN_ENV = "BUZZ_BRIDGE_LINK_TOKEN";
