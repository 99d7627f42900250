/** This installation's version: package.json's, which `--version`, the status page and the proxy's `initialize` report. */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const PACKAGE_VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;
  } catch {
    return "0.0.0";
  }
})();

/**
 * What `--version` prints: the version, and the commit when this runs from a git checkout
 * (`0.4.0 (commit 1a2b3c4d5e6f)`), so a build between releases says what it is. Only the
 * package's own folder counts as a checkout (its `.git`): an installed package that happens
 * to sit inside someone's repository is not theirs. Without git, or outside a checkout,
 * the version alone.
 */
export function versionLine(): string {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  if (!existsSync(`${root}.git`)) return PACKAGE_VERSION;
  const r = spawnSync("git", ["-C", root, "rev-parse", "--short=12", "HEAD"], { encoding: "utf8", timeout: 5_000 });
  const commit = r.status === 0 ? r.stdout.trim() : "";
  if (!/^[0-9a-f]{7,40}$/.test(commit)) return PACKAGE_VERSION;
  const dirty = spawnSync("git", ["-C", root, "status", "--porcelain", "--untracked-files=no"], { encoding: "utf8", timeout: 5_000 });
  return `${PACKAGE_VERSION} (commit ${commit}${dirty.status === 0 && dirty.stdout.trim() ? ", modified" : ""})`;
}
