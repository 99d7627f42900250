/**
 * The Dockerfile's recipe, exercised without a Docker engine: the build stage's COPY and
 * RUN steps are replayed in a temp dir (the `npm ci` step becomes a copy of this checkout's
 * node_modules, installed from the same lockfile), the run stage gets exactly the paths it
 * COPYs from the build stage, and the image's ENTRYPOINT is started from there. A runtime
 * import that lives in devDependencies, or a file the image forgets, fails here.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { startHttp, type HttpHandle } from "../src/app/http/http.js";
import { Metrics } from "../src/app/http/metrics.js";
import { dockerEnv, parseDockerfile, type Instruction } from "./fixtures/recipes.js";
import { generateSecretKey, nip19 } from "nostr-tools";

const REPO = join(import.meta.dirname, "..");
const dockerfile = readFileSync(join(REPO, "Dockerfile"), "utf8");

const [preamble, buildStage, runStage] = parseDockerfile(dockerfile) as [Instruction[], Instruction[], Instruction[]];
const argDefaults = Object.fromEntries(preamble.filter((i) => i.op === "ARG").map((i) => i.args.split("=") as [string, string]));
const expandArgs = (s: string) => s.replace(/\$\{(\w+)\}/g, (_, n: string) => argDefaults[n] ?? "");
const all = (stage: Instruction[], op: string) => stage.filter((i) => i.op === op);
const one = (stage: Instruction[], op: string) => {
  const found = all(stage, op);
  assert.equal(found.length, 1, `expected one ${op} in the stage`);
  return found[0]!.args;
};
const envOf = dockerEnv;

test("the Dockerfile has the pieces the issue names", () => {
  assert.ok(buildStage && runStage, "two stages");
  assert.equal(expandArgs(one(buildStage, "FROM")), "node:24-bookworm AS build");
  assert.equal(expandArgs(one(runStage, "FROM")), "node:24-bookworm-slim AS run");
  const buildRuns = all(buildStage, "RUN")
    .map((r) => r.args)
    .join("\n");
  assert.doesNotMatch(buildRuns, /apt-get|g\+\+|node-gyp/, "no toolchain: nothing native to build");
  // The image is the release package: what `npm pack` puts in it, with production dependencies.
  assert.match(buildRuns, /npm pack\b[\s\S]*tar -xzf buzz-bridge-\*\.tgz -C release/);
  for (const c of all(runStage, "COPY")) assert.match(c.args, /^--from=build \/app\/release\//);
  const user = one(runStage, "USER");
  assert.doesNotMatch(user, /^(root|0)(:|$)/, "runs as a non-root user");
  assert.equal(one(runStage, "VOLUME"), "/var/lib/buzz-bridge");
  assert.equal(one(runStage, "EXPOSE"), "9464");
  assert.equal(one(runStage, "STOPSIGNAL"), "SIGTERM");
  assert.match(one(runStage, "HEALTHCHECK"), /CMD \["node",.*/);
  assert.equal(envOf(runStage).BUZZ_BRIDGE_CONFIG, "/etc/buzz-bridge/buzz-bridge.yaml");
  assert.equal(envOf(runStage).BUZZ_BRIDGE_HEALTH_URL, "http://127.0.0.1:9464/healthz");
  assert.deepEqual(JSON.parse(one(runStage, "ENTRYPOINT")), ["node", "/app/dist/cli.js"]);
  assert.deepEqual(JSON.parse(one(runStage, "CMD")), ["run"]);
  // The run stage takes nothing from the build context, only the build stage's output.
  for (const c of all(runStage, "COPY")) assert.match(c.args, /^--from=build /);
});

test(".dockerignore keeps host installs, state and secrets out of the build context", () => {
  const ignored = readFileSync(join(REPO, ".dockerignore"), "utf8")
    .split("\n")
    .map((l) => l.trim());
  for (const p of ["node_modules", "dist", ".git", "*.nsec", ".state"]) assert.ok(ignored.includes(p), p);
  // …but never what the build stage COPYs.
  for (const c of all(buildStage, "COPY")) {
    for (const src of c.args.split(" ").slice(0, -1)) assert.ok(!ignored.includes(src), `${src} is COPYd but ignored`);
  }
});

recipeTests();

/** The recipe replay: one temp build dir and run dir shared by the tests below. */
function recipeTests(): void {
  const tmp = mkdtempSync(join(tmpdir(), "bb-docker-"));
  const buildDir = join(tmp, "build");
  const runDir = join(tmp, "app");
  let http: HttpHandle | undefined;
  const hiddenLockfile = join(REPO, "node_modules", ".package-lock.json");
  const digest = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");
  const hiddenLockfileBefore = existsSync(hiddenLockfile) ? digest(hiddenLockfile) : undefined;

  // The child npm must not inherit the outer `npm test`'s npm_* settings; offline because
  // every package is already in the copied node_modules (prune only removes).
  const cleanEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
    return { ...env, npm_config_offline: "true", npm_config_update_notifier: "false", ...extra };
  };

  before(() => {
    mkdirSync(buildDir);
    const workdir = "/app";
    assert.equal(one(buildStage, "WORKDIR"), workdir);
    for (const ins of buildStage) {
      if (ins.op === "COPY") {
        const parts = ins.args.split(" ");
        const dest = parts.pop()!;
        for (const src of parts) {
          const target = dest.endsWith("/") ? join(buildDir, dest, basename(src)) : join(buildDir, dest);
          cpSync(join(REPO, src), target, { recursive: true });
        }
      } else if (ins.op === "RUN" && /\bnpm ci\b/.test(ins.args)) {
        assert.ok(existsSync(join(buildDir, "package-lock.json")), "the lockfile is copied before npm ci");
        // A real copy, not hard links: npm rewrites node_modules/.package-lock.json in
        // place, which through a hard link would change this checkout's install.
        execFileSync("cp", ["-a", "--reflink=auto", join(REPO, "node_modules"), join(buildDir, "node_modules")]);
      } else if (ins.op === "RUN") {
        const r = spawnSync("sh", ["-c", ins.args], { cwd: buildDir, env: cleanEnv(), encoding: "utf8", timeout: 120_000 });
        assert.equal(r.status, 0, `RUN ${ins.args} failed:\n${r.stdout}\n${r.stderr}`);
      }
    }
    mkdirSync(runDir);
    for (const ins of all(runStage, "COPY")) {
      const m = /^--from=build \/app\/(\S+) \.\/(\S+)$/.exec(ins.args);
      assert.ok(m, `unexpected run-stage COPY: ${ins.args}`);
      renameSync(join(buildDir, m[1]!), join(runDir, m[2]!));
    }
  });

  after(async () => {
    await http?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  /** Runs the image's ENTRYPOINT with `args`, /app mapped to the temp run dir. */
  function entrypoint(args: string[], env: Record<string, string> = {}) {
    const [cmd, script] = JSON.parse(one(runStage, "ENTRYPOINT")) as [string, string];
    assert.equal(cmd, "node");
    const runEnv = { ...envOf(runStage), HOME: tmp, ...env };
    return spawnSync(process.execPath, [script.replace(/^\/app\//, `${runDir}/`), ...args], {
      cwd: runDir,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...runEnv },
      encoding: "utf8",
      timeout: 30_000,
    });
  }

  test("the run stage holds production dependencies only", () => {
    for (const p of ["dist/cli.js", "config/example.yaml", "package.json", "node_modules/nostr-tools"]) {
      assert.ok(existsSync(join(runDir, p)), `${p} is in the image`);
    }
    // (typescript itself stays: nostr-tools lists it as an optional peer, and npm keeps those.)
    for (const dev of ["tsx", "@types/node", "@modelcontextprotocol/server-everything"]) {
      assert.ok(!existsSync(join(runDir, "node_modules", dev)), `devDependency ${dev} was pruned`);
    }
    assert.ok(!existsSync(join(runDir, "src")), "sources stay in the build stage");
  });

  test("the image's entrypoint answers --help, check and dev-relay --help with production deps", () => {
    // The example asks for the key in the environment, as `docker run --env-file` gives it.
    const key = { BUZZ_PRIVATE_KEY: nip19.nsecEncode(generateSecretKey()) };
    for (const args of [["--help"], ["check", "-c", "config/example.yaml"], ["dev-relay", "--help"]]) {
      const r = entrypoint(args, key);
      assert.equal(r.status, 0, `${args.join(" ")} exited ${r.status}:\n${r.stderr}`);
    }
    // --version reads package.json next to dist/: the image must keep that layout.
    const version = entrypoint(["--version"]);
    assert.equal(version.stdout.trim(), JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")).version);
    // The mounted config is found through BUZZ_BRIDGE_CONFIG, without -c.
    const r = entrypoint(["check"], { ...key, BUZZ_BRIDGE_CONFIG: join(runDir, "config", "example.yaml") });
    assert.equal(r.status, 0, r.stderr);
  });

  test("every command's module loads with production deps", () => {
    const usage = entrypoint(["--help"]).stdout;
    const commands = [...usage.matchAll(/^ {2}(\S+) {2,}/gm)].map((m) => m[1]!);
    assert.ok(commands.includes("run") && commands.includes("mcp-proxy"), usage);
    for (const name of commands) {
      const r = entrypoint([name, "--help"]);
      assert.doesNotMatch(r.stderr, /ERR_MODULE_NOT_FOUND|Cannot find (package|module)/, `${name}: ${r.stderr}`);
      // Every listed command must really work: a "not implemented yet" is a failure, not a pass.
      assert.doesNotMatch(r.stderr, /not implemented yet/, `${name} is listed but not implemented`);
      assert.equal(r.status, 0, `${name} --help exited ${r.status}:\n${r.stderr}`);
    }
  });

  test("the HEALTHCHECK command passes against /healthz and fails when nothing answers", async () => {
    const hc = /CMD (\[.*\])$/.exec(one(runStage, "HEALTHCHECK"));
    assert.ok(hc);
    const [cmd, ...args] = JSON.parse(hc[1]!) as string[];
    assert.equal(cmd, "node", "no curl in slim images");
    http = await startHttp({ listen: "127.0.0.1:0", metrics: new Metrics({ defaultMetrics: false }), readiness: () => ({ checks: [] }) });
    // Asynchronous spawn: the probe talks to a server in this process.
    const probe = (url: string) =>
      new Promise<number | null>((resolve) => {
        const child = spawn(process.execPath, args, { env: { BUZZ_BRIDGE_HEALTH_URL: url }, stdio: "ignore" });
        child.on("exit", (code) => resolve(code));
      });
    assert.equal(await probe(`${http.url}/healthz`), 0);
    assert.equal(await probe(`${http.url}/not-health`), 1);
    const url = http.url;
    await http.close();
    http = undefined;
    assert.equal(await probe(`${url}/healthz`), 1);
  });

  test("replaying the recipe leaves this checkout's node_modules as it was", () => {
    assert.ok(existsSync(join(REPO, "node_modules", "tsx")), "dev dependencies still installed here");
    if (hiddenLockfileBefore) assert.equal(digest(hiddenLockfile), hiddenLockfileBefore);
  });
}
