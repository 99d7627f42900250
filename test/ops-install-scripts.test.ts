/**
 * `npm ci` from a fresh clone prints no "install scripts not yet covered by allowScripts"
 * warning: every package of the lockfile that has an install script is reviewed in
 * package.json's `allowScripts` (npm 11 reads it from the project root; an entry is the
 * package name, or `name@version` to pin a review to one version). And `npm ci` takes the
 * lockfile at all: a lockfile out of step with package.json (an optional dependency the
 * registry lacked, left out by `npm install`) fails a clean checkout's first command.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

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

test("npm ci accepts the lockfile: it is in step with package.json", () => {
  const dir = mkdtempSync(join(tmpdir(), "bb-npm-ci-"));
  try {
    for (const f of ["package.json", "package-lock.json"]) copyFileSync(f, join(dir, f));
    const r = spawnSync("npm", ["ci", "--dry-run", "--ignore-scripts", "--no-audit", "--no-fund"], {
      cwd: dir,
      encoding: "utf8",
      timeout: 300_000,
    });
    const errors = `${r.stdout}${r.stderr}`
      .split("\n")
      .filter((l) => l.startsWith("npm error"))
      .slice(0, 8)
      .join("\n");
    assert.equal(r.status, 0, `npm ci refuses the lockfile; run npm install and commit package-lock.json:\n${errors}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
