/**
 * A team entry with `agent.sandbox: off` would run its agent beside every other identity's
 * key: the config is refused naming what it could read, unless the operator opts in with
 * `team.allow_unsandboxed: true` — then `check` and `run` warn at every start, naming the
 * other agents' key files and the config. The real loader on real files.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { ConfigError, loadTeam, teamWarnings } from "../../src/config/load.js";
import { person } from "../../kit/queue-helpers.js";
import { nip19 } from "nostr-tools";

const dir = mkdtempSync(join(tmpdir(), "bb-team-sandbox-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const a = person();
const b = person();
const keyFile = join(dir, "b.nsec");
writeFileSync(keyFile, `${nip19.nsecEncode(b.sk)}\n`, { mode: 0o600 });

function team(name: string, extra: Record<string, unknown>, firstAgent: Record<string, unknown>): string {
  const file = join(dir, `${name}.yaml`);
  const config = {
    relay: { url: "ws://127.0.0.1:1" },
    state_dir: join(dir, `${name}-state`),
    agent: { command: process.execPath },
    ...extra,
    agents: [
      { identity: { secret_key: nip19.nsecEncode(a.sk) }, agent: { command: process.execPath, ...firstAgent } },
      { identity: { secret_key_file: keyFile } },
    ],
  };
  writeFileSync(file, stringify(config), { mode: 0o600 });
  return file;
}

describe("an unsandboxed entry in a team", () => {
  test("is a config error naming the other agent's key file and the config", () => {
    const file = team("refused", {}, { sandbox: "off" });
    assert.throws(
      () => loadTeam(file),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError, String(err));
        const p = err.problems.find((x) => x.path === "agents[0].agent.sandbox");
        assert.ok(p, err.message);
        assert.match(p.message, new RegExp(`agents\\[1\\]'s key file ${keyFile.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
        assert.ok(p.message.includes(file), "names the config");
        assert.match(p.message, /team\.allow_unsandboxed: true/);
        return true;
      },
    );
  });

  test("with team.allow_unsandboxed: true it loads, and every start warns what that agent can read", () => {
    const file = team("allowed", { team: { allow_unsandboxed: true } }, { sandbox: "off" });
    const warnings = teamWarnings(loadTeam(file));
    const w = warnings.filter((x) => x.includes("runs unsandboxed"));
    assert.equal(w.length, 1, warnings.join("\n"));
    assert.ok(w[0]!.includes(keyFile) && w[0]!.includes(`the config ${file}`), w[0]);
  });

  test("sandboxed entries (auto, bubblewrap) need no opt-in and get no warning", () => {
    const file = team("sandboxed", {}, { sandbox: "bubblewrap" });
    const warnings = teamWarnings(loadTeam(file));
    assert.deepEqual(
      warnings.filter((x) => x.includes("unsandboxed")),
      [],
    );
  });
});
