/**
 * `check` on a config of several agents (docs/configuration.md "Several agents in one
 * daemon"): one YAML document per agent, keys redacted. How entries are laid over the shared
 * keys and what a team can get wrong: test/unit/config-agents.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { CLI } from "../kit/world.js";
import { generateSecretKey, getPublicKey, nip19 } from "nostr-tools";

const keys = [0, 1].map(() => generateSecretKey());
const nsec = keys.map((k) => nip19.nsecEncode(k));
const pk = keys.map((k) => getPublicKey(k));
const owner = nip19.npubEncode(getPublicKey(generateSecretKey()));

const shared = `relay:\n  url: ws://127.0.0.1:7777\nidentity:\n  owner: ${owner}\nstate_dir: /tmp/team-state\nagent:\n  max_concurrent: 3\n  command: demo-agent\ndefaults:\n  respond_to: owner-only\n`;

test("check prints one YAML document per agent, each with its own key, id and state directory", () => {
  const dir = mkdtempSync(join(tmpdir(), "bb-team-check-"));
  try {
    const file = join(dir, "team.yaml");
    writeFileSync(
      file,
      `${shared.replace("state_dir: /tmp/team-state", `state_dir: ${join(dir, "state")}`)}agents:\n  - identity:\n      secret_key: ${nsec[0]}\n  - identity:\n      secret_key: ${nsec[1]}\n`,
    );
    const r = spawnSync(process.execPath, [CLI, "check", "-c", file], { encoding: "utf8", timeout: 30_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^# ${file}: valid; 2 agents in one daemon, state_dir ${join(dir, "state")}$`, "m"));
    const docs = parseAllDocuments(r.stdout).map((d) => d.toJS() as { state_dir: string; identity: { secret_key: string } } | null);
    const agents = docs.filter((d) => d !== null);
    assert.equal(agents.length, 2, r.stdout);
    for (const [i, a] of agents.entries()) {
      assert.equal(a.state_dir, join(dir, "state", "agents", pk[i]!.slice(0, 16)));
      assert.equal(a.identity.secret_key, "[redacted]");
      assert.match(r.stdout, new RegExp(`^# agents\\[${i}\\]: agent ${pk[i]!.slice(0, 16)}, pubkey ${nip19.npubEncode(pk[i]!)}`, "m"));
    }
    assert.ok(!r.stdout.includes(nsec[0]!) && !r.stdout.includes(nsec[1]!), "no key is printed");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
