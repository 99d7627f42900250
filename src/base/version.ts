/** This installation's version: package.json's, which `--version`, the status page and the proxy's `initialize` report. */
import { readFileSync } from "node:fs";

export const PACKAGE_VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;
  } catch {
    return "0.0.0";
  }
})();
