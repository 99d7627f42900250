/**
 * `doctor` beside a service, as an operator runs it by hand: it finds the state directory
 * the systemd unit gives the daemon (StateDirectory=), or takes `--state-dir`; it never
 * creates that directory; and run as the service user against the unit's root-owned key,
 * it says how the key reaches the service (LoadCredential=, $CREDENTIALS_DIRECTORY).
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateSecretKey, nip19 } from "nostr-tools";
import { serviceFor } from "../src/app/doctor/doctor-service.js";
import { REPO, World } from "../kit/world.js";
import { cliFor } from "./fixtures/run-as.js";
import { needs } from "./fixtures/ci.js";
import { runCli } from "./fixtures/cli.js";

let w: World;
let tmp: string;
before(async () => {
  w = await World.create();
  tmp = mkdtempSync(join(tmpdir(), "bb-doctor-svc-"));
  chmodSync(tmp, 0o755);
});
after(async () => {
  await w.close();
  rmSync(tmp, { recursive: true, force: true });
});

test("the installed unit that runs a config names its state directory; templates and other units do not count", () => {
  const units = join(tmp, "units");
  mkdirSync(units);
  const config = join(tmp, "etc", "buzz-bridge.yaml");
  const shipped = readFileSync(join(REPO, "config", "buzz-bridge.service"), "utf8");
  writeFileSync(join(units, "buzz-bridge.service"), shipped.replaceAll("/etc/buzz-bridge/buzz-bridge.yaml", config));
  writeFileSync(join(units, "buzz-bridge@.service"), readFileSync(join(REPO, "config", "buzz-bridge@.service"), "utf8"));
  writeFileSync(
    join(units, "other.service"),
    "[Service]\nExecStart=/usr/bin/node /srv/other/cli.js run -c /etc/other.yaml\nStateDirectory=other\n",
  );
  assert.deepEqual(serviceFor(config, [units]), {
    unit: "buzz-bridge.service",
    stateDir: "/var/lib/buzz-bridge",
    stateDirectory: "buzz-bridge",
    user: "buzz-bridge",
  });
  assert.equal(serviceFor(join(tmp, "elsewhere.yaml"), [units]), undefined, "a config no unit runs");
  // The shipped unit as installed: ExecStart's -c names /etc/buzz-bridge/buzz-bridge.yaml.
  writeFileSync(join(units, "buzz-bridge.service"), shipped);
  assert.equal(serviceFor("/etc/buzz-bridge/buzz-bridge.yaml", [units])?.stateDir, "/var/lib/buzz-bridge");
});

test("doctor --state-dir checks that directory, never creates it, and names the daemon that holds it", async () => {
  const configFile = w.writeConfig({ relay: { presence: false } }, "svc.yaml");
  const stateDir = join(tmp, "service-state");
  const doctor = () => runCli(["doctor", "-c", configFile, "--state-dir", stateDir, "--timeout", "30s"], { timeout: 120_000 });
  const stateLines = (out: string) => out.slice(out.indexOf("✓ state"), out.indexOf("\n", out.indexOf("\n", out.indexOf("✓ state")) + 1));
  const before = await doctor();
  assert.match(before.stdout, new RegExp(`^✓ state\\s+${stateDir} does not exist yet; \`run\` creates it`, "m"), before.stdout);
  assert.match(stateLines(before.stdout), /state_dir from --state-dir/);
  assert.equal(existsSync(stateDir), false, "doctor created nothing");

  const daemon = await w.startDaemon(
    {},
    { configFile: w.writeConfig({ relay: { presence: false }, state_dir: stateDir }, "svc-run.yaml") },
  );
  try {
    const held = await doctor();
    const line = held.stdout.split("\n").find((l) => l.startsWith("✓ state"));
    assert.ok(line, held.stdout);
    assert.match(line, new RegExp(`in use by a running daemon \\(pid ${daemon.proc.pid}: \\S+ \\S*cli\\.js run -c \\S*svc-run\\.yaml\\)`));
  } finally {
    await daemon.stop();
  }
});

const asRoot = needs(process.getuid?.() === 0, "root (to run the CLI as the service user)");
test("as the service user, a key it cannot read is explained: under systemd the key arrives through LoadCredential=", {
  skip: asRoot.skip,
}, () => {
  asRoot.assertPresent();
  const dir = join(tmp, "etc-buzz-bridge");
  mkdirSync(dir, { mode: 0o755 });
  const key = join(dir, "agent.nsec");
  writeFileSync(key, `${nip19.nsecEncode(generateSecretKey())}\n`, { mode: 0o600 });
  const config = join(dir, "buzz-bridge.yaml");
  writeFileSync(
    config,
    "identity:\n  secret_key_file: ${CREDENTIALS_DIRECTORY:-" + dir + "}/agent.nsec\nrelay:\n  url: ws://127.0.0.1:7777\n",
    { mode: 0o644 },
  );
  const nobody = { uid: 65534, gid: 65534 };
  const env = { PATH: process.env.PATH };
  const r = spawnSync(process.execPath, [cliFor(nobody, tmp), "check", "-c", config], { encoding: "utf8", env, ...nobody });
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(
    r.stderr,
    /secret key file .*agent\.nsec: EACCES.*; this user cannot read it\. Under the systemd unit the key reaches the service through LoadCredential= as \$CREDENTIALS_DIRECTORY\/agent\.nsec/,
  );
  assert.match(r.stderr, /run this command as root/);
});
