/**
 * policy.allowed_respond_to (the deployment's policy lock): `check` and start-up refuse a
 * config whose channel answers a respond_to mode outside the permitted list, naming the
 * channel and the list.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { generateSecretKey, nip19 } from "nostr-tools";
import { loadConfigText, ConfigError } from "../src/config/load.js";

const CLI = join(import.meta.dirname, "..", "dist", "cli.js");
const nsec = nip19.nsecEncode(generateSecretKey());
const base = `identity:\n  secret_key: ${nsec}\nrelay:\n  url: ws://127.0.0.1:7777\npolicy:\n  allowed_respond_to: [owner-only, allowlist]\n`;
const CHANNEL = "6f1c2a4e-0000-4000-8000-000000000001";

function problemsOf(text: string): string[] {
  try {
    loadConfigText(text, "t.yaml", {});
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    return err.message.split("\n");
  }
  assert.fail("config was accepted");
}

test("a channel answering a mode outside policy.allowed_respond_to is refused at its own key, naming channel and allowed list", () => {
  const lines = problemsOf(`${base}channels:\n  - id: "*"\n  - id: ${CHANNEL}\n    respond_to: anyone\n`);
  assert.deepEqual(lines, [
    `t.yaml:10:17: channels[1].respond_to: channel ${CHANNEL} answers respond_to: anyone, which policy.allowed_respond_to does not permit (allowed: owner-only, allowlist); use one of those`,
  ]);
});

test("a forbidden default is reported at defaults.respond_to for the channels that inherit it", () => {
  const lines = problemsOf(`${base}defaults:\n  respond_to: anyone\n`);
  assert.equal(lines.length, 1);
  assert.match(
    lines[0]!,
    /^t\.yaml:8:15: defaults\.respond_to: channel "\*" \(every channel\) answers respond_to: anyone \(from defaults\), which policy\.allowed_respond_to does not permit \(allowed: owner-only, allowlist\)/,
  );
});

test("permitted modes load; without the lock every mode loads", () => {
  assert.equal(
    loadConfigText(`${base}channels:\n  - id: ${CHANNEL}\n    respond_to: allowlist\n`, "t.yaml", {}).config.policy.allowed_respond_to
      ?.length,
    2,
  );
  const open = `identity:\n  secret_key: ${nsec}\nrelay:\n  url: ws://127.0.0.1:7777\ndefaults:\n  respond_to: anyone\n`;
  assert.equal(loadConfigText(open, "t.yaml", {}).config.defaults.respond_to, "anyone");
});

test("check and run both exit 1 on a locked-out mode, before connecting anywhere", () => {
  const dir = mkdtempSync(join(tmpdir(), "bb-lock-"));
  try {
    const file = join(dir, "locked.yaml");
    writeFileSync(file, `${base}state_dir: ${join(dir, "state")}\nchannels:\n  - id: ${CHANNEL}\n    respond_to: nobody\n`);
    for (const cmd of ["check", "run"]) {
      const r = spawnSync(process.execPath, [CLI, cmd, "-c", file], { encoding: "utf8", timeout: 20_000 });
      assert.equal(r.status, 1, `${cmd}: ${r.stderr}`);
      assert.match(
        r.stderr + r.stdout,
        new RegExp(
          `channel ${CHANNEL} answers respond_to: nobody, which policy\\.allowed_respond_to does not permit \\(allowed: owner-only, allowlist\\)`,
        ),
        cmd,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
