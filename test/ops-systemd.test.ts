/**
 * config/buzz-bridge.service: the directives the issue names, a stop timeout that leaves
 * room for the daemon's shutdown grace, and systemd's own verdict (`systemd-analyze
 * verify` and the offline `security` review) where systemd-analyze is installed.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { generateSecretKey, nip19 } from "nostr-tools";
import { loadConfigText } from "../src/config/load.js";
import { parseDuration } from "../src/config/duration.js";
import { parseUnit } from "./fixtures/recipes.js";
import { needs } from "./fixtures/ci.js";

const REPO = join(import.meta.dirname, "..");
const UNIT = "buzz-bridge.service";
const unitText = readFileSync(join(REPO, "config", UNIT), "utf8");

const service = parseUnit(unitText).get("Service")!;
const value = (key: string) => {
  const v = service.get(key);
  assert.ok(v, `[Service] sets ${key}`);
  return v[v.length - 1]!;
};

const which = (cmd: string) => {
  const r = spawnSync("sh", ["-c", `command -v ${cmd}`], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : undefined;
};
const analyze = which("systemd-analyze");
const systemd = needs(!!analyze, "systemd-analyze, from the Debian package systemd");
const skipNoSystemd = systemd.skip;

const tmp = mkdtempSync(join(tmpdir(), "bb-unit-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

test("the unit runs the daemon hardened, as a dedicated user, with state and config dirs", () => {
  assert.equal(value("User"), "buzz-bridge");
  assert.equal(service.get("DynamicUser"), undefined, "a dedicated user, not DynamicUser (see the unit's comment)");
  assert.equal(value("StateDirectory"), "buzz-bridge");
  assert.equal(value("ConfigurationDirectory"), "buzz-bridge");
  // node from the service's PATH (or an Environment=PATH= the operator sets), never a fixed path.
  assert.equal(value("ExecStart"), "/usr/bin/env node /opt/buzz-bridge/dist/cli.js run -c /etc/buzz-bridge/buzz-bridge.yaml");
  assert.doesNotMatch(unitText, /\/usr\/bin\/node\b/);
  assert.equal(value("ExecReload"), "/bin/kill -HUP $MAINPID", "reload ends by sending SIGHUP");
  assert.equal(value("Restart"), "on-failure");
  assert.equal(value("NoNewPrivileges"), "yes");
  assert.equal(value("ProtectSystem"), "strict");
  assert.equal(value("ProtectHome"), "yes");
  assert.equal(value("PrivateTmp"), "yes");
  assert.deepEqual(
    value("ReadWritePaths").split(/\s+/),
    ["/var/lib/buzz-bridge", "-/srv/agents"],
    "/srv/agents optional: agent.cwd defaults to the state dir",
  );
  assert.equal(value("KillSignal"), "SIGTERM");
  // SIGTERM to the daemon alone: agents keep working through the grace period.
  assert.equal(value("KillMode"), "mixed");
  // V8's JIT needs W+X memory; this directive would crash Node at start.
  assert.equal(service.get("MemoryDenyWriteExecute"), undefined);
});

test("TimeoutStopSec leaves room above the default shutdown grace", () => {
  const nsec = nip19.nsecEncode(generateSecretKey());
  const { config } = loadConfigText(`identity:\n  secret_key: ${nsec}\nrelay:\n  url: ws://127.0.0.1:7777\n`, "t.yaml", {});
  const graceMs = config.shutdown_grace;
  const stopMs = parseDuration(value("TimeoutStopSec"));
  assert.ok(stopMs !== null, "TimeoutStopSec in seconds");
  assert.ok(stopMs >= graceMs + 10_000, `TimeoutStopSec ${stopMs} ms vs shutdown_grace ${graceMs} ms`);
});

/** The unit as systemd-analyze should see it, with paths that exist on this machine. */
function installableCopy(text: string, name = UNIT): string {
  const kill = which("kill") ?? "/bin/kill";
  const adapted = text
    .replaceAll("/opt/buzz-bridge/dist/cli.js", join(REPO, "dist", "cli.js"))
    .replaceAll("/bin/kill ", `${kill.startsWith("/") ? kill : "/bin/kill"} `);
  const file = join(tmp, name);
  writeFileSync(file, adapted);
  return file;
}

function verify(file: string) {
  const r = spawnSync(analyze!, ["verify", "--man=no", file], { cwd: tmp, encoding: "utf8", timeout: 30_000 });
  // Lines about our unit only: a container without a running systemd adds unrelated noise.
  const complaints = `${r.stdout}\n${r.stderr}`.split("\n").filter((l) => l.includes(".service"));
  return { status: r.status, complaints };
}

test("systemd-analyze verify accepts the unit without warnings", { skip: skipNoSystemd }, () => {
  systemd.assertPresent();
  const { status, complaints } = verify(installableCopy(unitText));
  assert.equal(status, 0, complaints.join("\n"));
  assert.deepEqual(complaints, []);
});

test("…and the same check does catch a broken unit (the harness is not blind)", { skip: skipNoSystemd }, () => {
  systemd.assertPresent();
  const broken = unitText.replace("KillMode=mixed", "KillMode=mixd\nProtectSytem=strict");
  const { complaints } = verify(installableCopy(broken, "broken-bridge.service"));
  assert.ok(
    complaints.some((l) => /kill mode/i.test(l)),
    complaints.join("\n"),
  );
  assert.ok(
    complaints.some((l) => /ProtectSytem/.test(l)),
    complaints.join("\n"),
  );
});

test("systemd-analyze security rates the unit's exposure low", { skip: skipNoSystemd }, () => {
  systemd.assertPresent();
  const file = installableCopy(unitText);
  const r = spawnSync(analyze!, ["security", "--offline=yes", "--no-pager", file], { cwd: tmp, encoding: "utf8", timeout: 30_000 });
  const m = /Overall exposure level for \S+: (\d+(?:\.\d+)?)/.exec(r.stdout);
  assert.ok(m, `no exposure level in:\n${r.stdout}\n${r.stderr}`);
  // 0 = fully locked down, 10 = unprotected; systemd calls < 4 "OK". Ours needs exec and network.
  assert.ok(Number(m[1]) <= 2.5, `exposure ${m[1]}`);
});

test("the unit's install steps work on a fresh machine: production dependencies only, and buzz-bridge on the service's PATH", () => {
  const steps = unitText
    .split("\n")
    .filter((l) => /^# {3}\S/.test(l))
    .map((l) => l.replace(/^#\s+/, "").replace(/\s+#.*$/, ""));
  const at = (re: RegExp) => {
    const i = steps.findIndex((s) => re.test(s));
    assert.ok(i >= 0, `a step matching ${re} in:\n${steps.join("\n")}`);
    return i;
  };
  const mkdir = at(/^install -d .*\/opt\/buzz-bridge$/);
  const copy = at(/^cp -r .* \/opt\/buzz-bridge\/$/);
  const deps = at(/npm ci --omit=dev/);
  const chmod = at(/^chmod 0755 \/opt\/buzz-bridge\/dist\/cli\.js$/);
  const link = at(/^ln -sf \/opt\/buzz-bridge\/dist\/cli\.js \/usr\/local\/bin\/buzz-bridge$/);
  assert.ok(mkdir < copy && copy < deps && deps < chmod && chmod < link, steps.join("\n"));
  assert.doesNotMatch(steps[copy]!, /node_modules/, "development dependencies are never copied into /opt");
  assert.match(steps[copy]!, /package-lock\.json/, "npm ci installs from the lockfile");
  // systemd's default PATH for services holds /usr/local/bin, where the link goes.
  assert.equal(
    service.get("Environment")?.some((e) => e.startsWith("PATH=")),
    false,
    "the unit keeps systemd's default PATH",
  );

  // Replayed into an empty root; npm ci --omit=dev (the network) is left out: the Dockerfile
  // test runs a production-only tree, and --version needs no dependency.
  const root = join(tmp, "fresh");
  const mapped = (s: string) => s.replaceAll("/opt/", `${root}/opt/`).replaceAll("/usr/local/bin/", `${root}/usr/local/bin/`);
  mkdirSync(join(root, "usr", "local", "bin"), { recursive: true });
  for (const s of [steps[mkdir]!, steps[copy]!, steps[chmod]!, steps[link]!]) {
    const r = spawnSync("sh", ["-c", mapped(s)], { cwd: REPO, encoding: "utf8" });
    assert.equal(r.status, 0, `${s}\n${r.stderr}`);
  }
  const systemdPath = `${join(root, "usr", "local", "bin")}:/usr/bin:/bin`;
  const version = spawnSync("buzz-bridge", ["--version"], {
    encoding: "utf8",
    env: { PATH: `${systemdPath}:${dirname(process.execPath)}` },
  });
  assert.equal(version.status, 0, version.stderr);
  assert.equal(version.stdout.trim(), (JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string }).version);
});

test("secrets reach the service as systemd hands them over: the key by LoadCredential=, API keys by EnvironmentFile=", () => {
  assert.equal(value("LoadCredential"), "agent.nsec:/etc/buzz-bridge/agent.nsec");
  assert.equal(value("EnvironmentFile"), "-/etc/buzz-bridge/env");
  assert.doesNotMatch(unitText, /0640, group buzz-bridge\)/, "no instruction the daemon would refuse");
});
