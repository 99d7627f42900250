/** The package version, told to downstream servers and to the agent in `initialize`. */
export { PACKAGE_VERSION as PROXY_VERSION } from "../base/version.js";
