/** The daemon↔proxy link: what the daemon imports. */
export { LinkServer, linkRootPath, type LinkSession } from "./server.js";
export { manifestFromConfig } from "../contract/manifest.js";
export { directBuzzTools, type BuzzToolHandlers } from "./buzz-call.js";
