/**
 * One rule for relative paths in a config: relative to the config file's directory, for
 * every path key, wherever the daemon is started from; and defaults that work where the
 * recipes put the config on a read-only path (state under $STATE_DIRECTORY, agents' work
 * dirs inside the state dir).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateSecretKey, nip19 } from "nostr-tools";
import { loadConfigText } from "../src/config/load.js";
import { CLI } from "../kit/world.js";

const nsec = nip19.nsecEncode(generateSecretKey());
const head = `identity:\n  secret_key: ${nsec}\nrelay:\n  url: ws://127.0.0.1:7777\n`;

test("every relative path key resolves against the config file's directory", () => {
  const text = `${head}state_dir: state\nagent:\n  cwd: ./agents/{channel}\nmcp:\n  servers:\n    dev: { command: x, cwd: tools }\n`;
  const { config } = loadConfigText(text, "/etc/buzz-bridge/buzz-bridge.yaml", {});
  assert.equal(config.state_dir, "/etc/buzz-bridge/state");
  assert.equal(config.agent.cwd, "/etc/buzz-bridge/agents/{channel}");
  assert.equal(config.mcp.servers.dev!.cwd, "/etc/buzz-bridge/tools");
  const seeded = loadConfigText(
    `identity:\n  secret_key: ${nsec}\nrelay:\n  url: embedded\n  seed: seed.yaml\n`,
    "/srv/bb/conf.yaml",
    {},
  ).config;
  assert.equal(seeded.relay.seed, "/srv/bb/seed.yaml");
});

test("defaults: state_dir is $STATE_DIRECTORY when set (systemd, the image), else beside the config; work dirs inside it", () => {
  const provided = loadConfigText(head, "/etc/buzz-bridge/buzz-bridge.yaml", { STATE_DIRECTORY: "/var/lib/buzz-bridge" }).config;
  assert.equal(provided.state_dir, "/var/lib/buzz-bridge");
  assert.equal(provided.agent.cwd, "/var/lib/buzz-bridge/work/{channel}");
  // systemd joins several StateDirectory= entries with ':'; the first is the service's own.
  assert.equal(loadConfigText(head, "/etc/b.yaml", { STATE_DIRECTORY: "/var/lib/a:/var/lib/b" }).config.state_dir, "/var/lib/a");
  const beside = loadConfigText(head, "/home/me/bb/buzz-bridge.yaml", {}).config;
  assert.equal(beside.state_dir, "/home/me/bb/buzz-bridge-state");
  assert.equal(beside.agent.cwd, "/home/me/bb/buzz-bridge-state/work/{channel}");
  // An explicit state_dir wins over the environment.
  assert.equal(
    loadConfigText(`${head}state_dir: /data/bb\n`, "/etc/b.yaml", { STATE_DIRECTORY: "/var/lib/x" }).config.state_dir,
    "/data/bb",
  );
});

test("check prints the same paths whatever directory it runs from", () => {
  const dir = mkdtempSync(join(tmpdir(), "bb-paths-"));
  try {
    mkdirSync(join(dir, "conf"));
    mkdirSync(join(dir, "elsewhere"));
    writeFileSync(join(dir, "conf", "bb.yaml"), `${head}agent:\n  cwd: work/{channel}\n`);
    const env = { ...process.env };
    delete env.STATE_DIRECTORY;
    const outs = [dir, join(dir, "elsewhere")].map((cwd) =>
      spawnSync(process.execPath, [CLI, "check", "-c", join(dir, "conf", "bb.yaml")], { cwd, env, encoding: "utf8" }),
    );
    for (const r of outs) {
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`^  cwd: ${join(dir, "conf", "work")}/\\{channel\\}$`, "m"));
      assert.match(r.stdout, new RegExp(`^state_dir: ${join(dir, "conf", "buzz-bridge-state")}$`, "m"));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
