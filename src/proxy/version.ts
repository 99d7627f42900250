import { readFileSync } from "node:fs";

/** The package version, told to downstream servers and to the agent in `initialize`. */
export const PROXY_VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;
  } catch {
    return "0.0.0";
  }
})();
