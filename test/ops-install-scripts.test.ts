/**
 * `npm ci` from a fresh clone prints no "install scripts not yet covered by allowScripts"
 * warning: every package of the lockfile that has an install script is reviewed in
 * package.json's `allowScripts` (npm 11 reads it from the project root; an entry is the
 * package name, or `name@version` to pin a review to one version).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

interface LockEntry {
  version?: string;
  hasInstallScript?: boolean;
}

test("every lockfile package with an install script is covered by allowScripts", () => {
  const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { allowScripts?: Record<string, boolean> };
  const lock = JSON.parse(readFileSync("package-lock.json", "utf8")) as { packages: Record<string, LockEntry> };
  const reviewed = Object.keys(pkg.allowScripts ?? {});
  const covered = (name: string, version?: string) => reviewed.some((r) => r === name || r === `${name}@${version}`);
  const uncovered = Object.entries(lock.packages)
    .filter(([path, entry]) => path !== "" && entry.hasInstallScript)
    .map(([path, entry]) => ({ name: path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length), version: entry.version }))
    .filter((p) => !covered(p.name, p.version))
    .map((p) => `${p.name}@${p.version}`);
  assert.deepEqual(uncovered, [], "add these to package.json allowScripts after reviewing their install scripts (npm approve-scripts)");
});
