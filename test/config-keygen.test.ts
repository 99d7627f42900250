/**
 * `keygen` for a service user: the key file is created with the owner and mode the
 * service needs (the daemon refuses a key group or others can read), and the flags that
 * would make an unusable file are refused with the reason.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI } from "../kit/world.js";

const keygen = (args: string[]) => spawnSync(process.execPath, [CLI, "keygen", ...args], { encoding: "utf8", timeout: 30_000 });
const isRoot = process.getuid?.() === 0;

test("keygen --owner --mode hands the key file to the service user, readable by it alone", () => {
  const dir = mkdtempSync(join(tmpdir(), "bb-keygen-"));
  try {
    const out = join(dir, "agent.nsec");
    const r = keygen(["--out", out, "--owner", "65534:65534", "--mode", "0400"]);
    if (!isRoot) {
      assert.equal(r.status, 1);
      assert.match(r.stderr, /cannot give .* to 65534:65534: EPERM \(changing a file's owner needs root\)/);
      assert.ok(!existsSync(out), "no half-made key file is left behind");
      return;
    }
    assert.equal(r.status, 0, r.stderr);
    const st = statSync(out);
    assert.equal(st.uid, 65534);
    assert.equal(st.gid, 65534);
    assert.equal(st.mode & 0o777, 0o400);
    assert.match(r.stdout, /nsec written to .* \(mode 0400, owner 65534:65534\)/);
    // A name works as well as a number (getent), here the system's nobody.
    const byName = keygen(["--out", join(dir, "b.nsec"), "--owner", "nobody"]);
    assert.equal(byName.status, 0, byName.stderr);
    assert.equal(statSync(join(dir, "b.nsec")).uid, 65534);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("keygen refuses a mode the daemon would refuse, an unknown user, and --owner without --out", () => {
  const dir = mkdtempSync(join(tmpdir(), "bb-keygen-"));
  try {
    const group = keygen(["--out", join(dir, "a.nsec"), "--mode", "0640"]);
    assert.equal(group.status, 1);
    assert.match(group.stderr, /--mode 0640: use 0600 or 0400; the daemon refuses a key file group or others can read/);
    const nobody = keygen(["--out", join(dir, "a.nsec"), "--owner", "no-such-user-xyz"]);
    assert.equal(nobody.status, 1);
    assert.match(nobody.stderr, /--owner: no user 'no-such-user-xyz' on this system/);
    const noOut = keygen(["--owner", "nobody"]);
    assert.equal(noOut.status, 1);
    assert.match(noOut.stderr, /--owner and --mode apply to the key file: give --out FILE/);
    assert.ok(!existsSync(join(dir, "a.nsec")));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
