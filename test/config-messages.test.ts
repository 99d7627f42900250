/**
 * Config mistakes a new user makes, each answered with the real cause and the fix: a
 * channel name where the UUID goes, a server name with `__`, no config file at all, an
 * indentation slip (reported on the line that is off, not the line before), an unset key.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateSecretKey, nip19 } from "nostr-tools";
import { ConfigError, loadConfigText } from "../src/config/load.js";

const CLI = join(import.meta.dirname, "..", "dist", "cli.js");
const nsec = nip19.nsecEncode(generateSecretKey());
const head = `identity:\n  secret_key: ${nsec}\nrelay:\n  url: ws://127.0.0.1:7777\n`;

function problems(text: string): string[] {
  try {
    loadConfigText(text, "t.yaml", {});
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.message.split("\n");
  }
  assert.fail("accepted");
}

test("a channel name where the UUID goes is refused with a hint to use the UUID", () => {
  assert.deepEqual(problems(`${head}channels:\n  - id: release-room\n`), [
    `t.yaml:6:9: channels[0].id: 'release-room' looks like a channel name; channels are given by their UUID (e.g. 6f1c2a4e-0000-4000-8000-000000000001) or "*" — \`buzz-bridge doctor\` lists each channel's name and UUID`,
  ]);
  assert.match(
    problems(`${head}channels:\n  - id: "6f1c2a4e-0000-4000-8000"\n`)[0]!,
    /is not a channel UUID \(8-4-4-4-12 hex digits\) or "\*"/,
  );
  const upper = "6F1C2A4E-0000-4000-8000-00000000000A";
  const { config } = loadConfigText(`${head}channels:\n  - id: ${upper}\n`, "t.yaml", {});
  assert.equal(config.channels[0]!.id, upper.toLowerCase(), "normalised to the relay's lowercase form");
});

test("an MCP server name with __ says why it is refused, at the name", () => {
  assert.deepEqual(problems(`${head}mcp:\n  servers:\n    my__dev: { command: x }\n`), [
    "t.yaml:7:5: mcp.servers.my__dev: bad name 'my__dev': server names use letters, digits and - only ('_' separates a server's name from its tools' names in the proxy, and '__' is the agent's own separator)",
  ]);
});

test("a line indented one space too deep is reported on that line, with the column it belongs at", () => {
  assert.deepEqual(problems(`${head}agent:\n  command: x\n   args: []\n`), [
    "t.yaml:7:4: bad indentation: this line starts at column 4, deeper than 'command' on line 6, which already has a value; start it at column 3 like 'command' (keys of one mapping line up)",
  ]);
  assert.deepEqual(problems(`${head}agent:\n  command: x\n args: []\n`), [
    "t.yaml:7:2: bad indentation: 'args' starts at column 2, which lines up with no key above it; start it at column 3 (line 6) or 1 (line 5) (keys of one mapping line up)",
  ]);
});

test("a key written without its colon is one error on that line, however the parser stumbles after it", () => {
  const fix = "missing ':' after 'respond_to': write it as respond_to: owner-only";
  // Followed by sibling keys (the parser's errors land on every later line), alone in its
  // mapping (the parser reads the mapping as one string), and inside a list item.
  assert.deepEqual(problems(`${head}defaults:\n  respond_to owner-only    # a comment\n  on_denied: react\n  history: 12\n`), [
    `t.yaml:6:3: ${fix}`,
  ]);
  assert.deepEqual(problems(`${head}defaults:\n  respond_to owner-only\n`), [`t.yaml:6:3: ${fix}`]);
  assert.deepEqual(problems(`${head}channels:\n  - id: "*"\n    respond_to owner-only\n`), [`t.yaml:7:5: ${fix}`]);
  // A text block may hold such lines: it is no key, and nothing is said about it.
  const { config } = loadConfigText(`${head}agent:\n  persona: |\n    Keep answers short\n`, "t.yaml", {});
  assert.equal(config.agent.persona, "Keep answers short\n");
  const plain = loadConfigText(`${head}agent:\n  persona:\n    Keep answers short\n`, "t.yaml", {});
  assert.equal(plain.config.agent.persona, "Keep answers short", "a plain text value on its own line is text too");
});

test("a missing config file names -c and BUZZ_BRIDGE_CONFIG, for run, check and doctor", () => {
  const dir = mkdtempSync(join(tmpdir(), "bb-noconf-"));
  try {
    for (const cmd of ["run", "check", "doctor"]) {
      const env = { ...process.env };
      delete env.BUZZ_BRIDGE_CONFIG;
      const r = spawnSync(process.execPath, [CLI, cmd], { cwd: dir, env, encoding: "utf8", timeout: 30_000 });
      assert.equal(r.status, 1, `${cmd}: ${r.stdout}${r.stderr}`);
      const out = r.stdout + r.stderr;
      assert.ok(
        out.includes(
          `${join(dir, "buzz-bridge.yaml")}:1:1: cannot read config: ENOENT; give the file with -c FILE or BUZZ_BRIDGE_CONFIG=FILE`,
        ),
        `${cmd}: ${out}`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("heartbeat.channel is a channel UUID too, with the same hint for a name", () => {
  assert.deepEqual(problems(`${head}heartbeat:\n  every: 30m\n  channel: general\n`), [
    "t.yaml:7:12: heartbeat.channel: 'general' looks like a channel name; channels are given by their UUID (e.g. 6f1c2a4e-0000-4000-8000-000000000001) — `buzz-bridge doctor` lists each channel's name and UUID",
  ]);
});

test("mcp.transport: http beside a sandbox without network is refused, naming the network key and what to use instead", () => {
  const channel = "6f1c2a4e-0000-4000-8000-000000000001";
  const lines = problems(
    `${head}mcp:\n  transport: http\nagent:\n  network: on\nchannels:\n  - id: "*"\n  - id: ${channel}\n    agent: { network: off }\n`,
  );
  assert.equal(lines.length, 1, lines.join("\n"));
  assert.match(
    lines[0]!,
    /^t\.yaml:\d+:\d+: mcp\.transport: mcp\.transport: http needs the agent to reach the daemon on loopback, but channels\[1\]\.agent\.network is off; use mcp\.transport: auto/,
  );
  assert.match(problems(`${head}mcp:\n  transport: http\nagent:\n  network: off\n`)[0]!, /but agent\.network is off/);
  // auto keeps the stdio proxy for such sessions: accepted.
  loadConfigText(`${head}mcp:\n  transport: auto\nagent:\n  network: off\n`, "t.yaml", {});
});
