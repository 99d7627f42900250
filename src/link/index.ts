/** The daemon↔proxy link: what the daemon imports. */
export { LinkServer, HELLO_TIMEOUT_MS, linkRootPath, SESSION_SOCKET_NAME, type BuzzToolHandlers, type LinkSession } from "./server.js";
export { createBuzzTools, BuzzToolError, type RelayPort, type BuzzToolsOptions } from "./buzz-tools.js";
export { LINK_ENV, LINK_TOKEN_ENV, LinkError, type ProxyManifest } from "./protocol.js";
export { manifestFromConfig } from "../contract/manifest.js";
