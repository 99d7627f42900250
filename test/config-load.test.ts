import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, chmodSync, rmSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync, spawnSync } from "node:child_process";
import { generateSecretKey, getPublicKey, nip19 } from "nostr-tools";
import { parseDocument } from "yaml";
import { Writable } from "node:stream";
import { loadConfig, loadConfigText, ConfigError } from "../src/config/load.js";
import { policyFor, jsonSchema } from "../src/config/schema.js";
import { createLogger } from "../src/base/log.js";

const CLI = join(import.meta.dirname, "..", "dist", "cli.js");
const sk = generateSecretKey();
const nsec = nip19.nsecEncode(sk);
const hex = getPublicKey(sk);
const owner = getPublicKey(generateSecretKey());

function problemsOf(text: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    loadConfigText(text, "t.yaml", env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    return err.message.split("\n");
  }
  assert.fail("config was accepted");
}

const minimal = (extra = "") =>
  `identity:\n  secret_key: ${nsec}\n  owner: ${nip19.npubEncode(owner)}\nrelay:\n  url: ws://127.0.0.1:7777\n${extra}`;

test("the shipped example and demo configs load (the example only with the key it asks for)", () => {
  for (const f of ["config/example.yaml", "config/demo.yaml"]) {
    const loaded = loadConfig(f, { BUZZ_PRIVATE_KEY: nsec });
    assert.equal(loaded.config.identity.secret_key, "[redacted]");
    assert.match(loaded.pubkey, /^[0-9a-f]{64}$/);
  }
  assert.equal(loadConfig("config/example.yaml", { BUZZ_PRIVATE_KEY: nsec }).pubkey, hex);
});

test("the shipped example permits every respond_to mode, as the docs say the default does: its policy lock is commented out", () => {
  const doc = parseDocument(readFileSync("config/example.yaml", "utf8"));
  for (const mode of ["owner-only", "allowlist", "anyone", "nobody"]) {
    doc.setIn(["defaults", "respond_to"], mode);
    const { config } = loadConfigText(doc.toString(), "example.yaml", { BUZZ_PRIVATE_KEY: nsec });
    assert.equal(config.defaults.respond_to, mode);
  }
});

test("no shipped config falls back to a published key: an unset BUZZ_PRIVATE_KEY is an error naming it", () => {
  assert.deepEqual(
    problemsOf(readFileSync("config/example.yaml", "utf8"), {}).map((l) => l.replace(/^t\.yaml:\d+:\d+: /, "")),
    [
      "identity.secret_key: environment variable BUZZ_PRIVATE_KEY is not set; set it to the agent's nsec (buzz-bridge keygen makes one) or use identity.secret_key_file instead",
    ],
  );
  // Only the demo's own config may carry a key, and it says it is published.
  for (const f of readdirSync("config").filter((n) => /\.ya?ml$/.test(n) && n !== "demo.yaml")) {
    assert.doesNotMatch(readFileSync(join("config", f), "utf8").replace(/^\s*#.*$/gm, ""), /nsec1|[0-9a-f]{64}/i, `${f} holds a key`);
  }
});

test("defaults fill every key; durations become milliseconds", () => {
  const { config } = loadConfigText(minimal(), "t.yaml", {});
  assert.equal(config.agent.idle_timeout, 15 * 60_000);
  assert.equal(config.agent.max_turn, 2 * 3_600_000);
  assert.equal(config.mcp.hook_deadline, 2000);
  assert.equal(config.defaults.respond_to, "owner-only");
  assert.deepEqual(config.channels, [{ id: "*" }]);
  assert.equal(config.identity.owner, owner);
});

test("a typo in a key is refused with FILE:LINE:COL and the key path", () => {
  const lines = problemsOf(minimal("agent:\n  max_concurent: 3\n"));
  assert.deepEqual(lines, ["t.yaml:7:3: agent.max_concurent: unknown key 'max_concurent'"]);
});

test("every error is reported at once, each at its position", () => {
  const text = [
    "identity:",
    "  secret_key: ${MISSING_VAR}",
    "  owner: npub1nope",
    "relay:",
    "  url: http://wrong",
    "agent:",
    "  idle_timeout: 15 minutes",
    "  max_concurrent: lots",
    "defaults:",
    "  mcp: [dev]",
    "channels:",
    "  - id: 6f1c2a4e-0000-4000-8000-00000000abcd",
    "  - id: 6f1c2a4e-0000-4000-8000-00000000abcd",
  ].join("\n");
  const lines = problemsOf(text);
  const expect = [
    /^t\.yaml:2:15: identity\.secret_key: environment variable MISSING_VAR is not set; set it to the agent's nsec/,
    /^t\.yaml:3:10: identity\.owner: bad pubkey/,
    /^t\.yaml:5:8: relay\.url: expected ws:\/\/host/,
    /^t\.yaml:7:17: agent\.idle_timeout: bad duration/,
    /^t\.yaml:8:19: agent\.max_concurrent: .*expected number/,
    /^t\.yaml:10:9: defaults\.mcp\[0\]: unknown mcp server 'dev'/,
    /^t\.yaml:13:9: channels\[1\]\.id: duplicate channel id 6f1c2a4e-0000-4000-8000-00000000abcd/,
  ];
  assert.equal(lines.length, expect.length, lines.join("\n"));
  expect.forEach((re, i) => assert.match(lines[i]!, re));
});

test("a missing required key names the key", () => {
  const lines = problemsOf(`identity:\n  secret_key: ${nsec}\n`);
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /^t\.yaml:1:1: relay: /);
});

test("${VAR} and ${VAR:-fallback} interpolate from the environment", () => {
  const text = `identity:\n  secret_key: \${KEY}\nrelay:\n  url: ws://\${HOST:-127.0.0.1}:\${PORT}\n`;
  const { config, pubkey } = loadConfigText(text, "t.yaml", { KEY: nsec, PORT: "9000" });
  assert.equal(config.relay.url, "ws://127.0.0.1:9000");
  assert.equal(pubkey, hex);
});

test("npub and hex pubkeys are both accepted and normalised to lowercase hex", () => {
  const other = getPublicKey(generateSecretKey());
  const { config } = loadConfigText(
    minimal(`defaults:\n  respond_to: allowlist\n  allow: [${nip19.npubEncode(other)}, ${owner.toUpperCase()}]\n`),
    "t.yaml",
    {},
  );
  assert.deepEqual(config.defaults.allow, [other, owner]);
  const policy = policyFor(config, "any-channel");
  assert.equal(policy.respond_to, "allowlist");
});

test("allowlist with an empty allow list is accepted but warned", () => {
  const { warnings } = loadConfigText(minimal("defaults:\n  respond_to: allowlist\n"), "t.yaml", {});
  assert.ok(
    warnings.some((w) => /allowlist but allow is empty/.test(w)),
    warnings.join("\n"),
  );
});

test("a channel entry overrides defaults for that channel only", () => {
  const c1 = "6f1c2a4e-0000-4000-8000-0000000000c1";
  const { config } = loadConfigText(minimal(`channels:\n  - id: "*"\n  - id: ${c1}\n    respond_to: anyone\n`), "t.yaml", {});
  assert.equal(policyFor(config, c1).respond_to, "anyone");
  assert.ok(policyFor(config, c1).explicit.has("respond_to"));
  assert.equal(policyFor(config, "c2").respond_to, "owner-only");
});

test("secret_key_file must not be group/world readable", () => {
  const dir = mkdtempSync(join(tmpdir(), "bb-cfg-"));
  try {
    const keyFile = join(dir, "agent.nsec");
    writeFileSync(keyFile, `${nsec}\n`);
    chmodSync(keyFile, 0o644);
    const text = `identity:\n  secret_key_file: ${keyFile}\nrelay:\n  url: ws://127.0.0.1:1\n`;
    const lines = problemsOf(text);
    assert.match(lines[0]!, /^t\.yaml:2:20: identity\.secret_key_file: secret key file .*agent\.nsec has mode 0644/);
    chmodSync(keyFile, 0o600);
    assert.equal(loadConfigText(text, "t.yaml", {}).pubkey, hex);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("check exits 0 without showing the secret, 1 with positions on a typo", () => {
  const ok = spawnSync(process.execPath, [CLI, "check", "-c", "config/example.yaml"], {
    encoding: "utf8",
    env: { PATH: process.env.PATH, BUZZ_PRIVATE_KEY: nsec },
  });
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /secret_key: "\[redacted\]"/);
  assert.doesNotMatch(ok.stdout, /nsec1/);
  const dir = mkdtempSync(join(tmpdir(), "bb-cfg-"));
  try {
    // Keys a person reads are npubs, as they wrote them; hex is for the wire.
    const teammate = nip19.npubEncode(getPublicKey(generateSecretKey()));
    const keys = join(dir, "keys.yaml");
    writeFileSync(
      keys,
      minimal(`defaults:\n  allow: [${getPublicKey(generateSecretKey())}]\nchannels:\n  - id: "*"\n    allow: [${teammate}]\n`),
    );
    const shown = spawnSync(process.execPath, [CLI, "check", "-c", keys], { encoding: "utf8" });
    assert.equal(shown.status, 0, shown.stderr);
    assert.match(shown.stdout, new RegExp(`^  owner: ${nip19.npubEncode(owner)}$`, "m"));
    assert.match(shown.stdout, new RegExp(`^ {6}- ${teammate}$`, "m"));
    assert.doesNotMatch(shown.stdout.split("\n").slice(2).join("\n"), /\b[0-9a-f]{64}\b/, "no hex key in the settings");
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, minimal("relayy: {}\n"));
    const r = spawnSync(process.execPath, [CLI, "check", "-c", bad], { encoding: "utf8" });
    assert.equal(r.status, 1);
    assert.match(r.stderr, new RegExp(`${bad.replace(/[.]/g, "\\.")}:6:1: relayy: unknown key 'relayy'`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("check refuses an mcp.hook_deadline at or above buzz-agent's 2.5 s when the agent calls the hooks", () => {
  for (const gates of ["gates:\n  enforce: agent\n", "agent:\n  command: /usr/local/bin/buzz-agent-acp\n"]) {
    const problems = problemsOf(minimal(`${gates}mcp:\n  hook_deadline: 2500ms\n`));
    assert.equal(problems.length, 1, problems.join("\n"));
    assert.match(
      problems[0]!,
      /^t\.yaml:\d+:\d+: mcp\.hook_deadline: 2500 ms is not below buzz-agent's own 2500 ms wait .*set it below 2\.5s/,
    );
  }
  // Below the agent's wait, or gates enforced by the bridge (it waits as long as it is told): accepted.
  assert.equal(
    loadConfigText(minimal("gates:\n  enforce: agent\nmcp:\n  hook_deadline: 2400ms\n"), "t.yaml", {}).config.mcp.hook_deadline,
    2400,
  );
  assert.equal(
    loadConfigText(minimal("gates:\n  enforce: bridge\nmcp:\n  hook_deadline: 5s\n"), "t.yaml", {}).config.mcp.hook_deadline,
    5000,
  );
  const dir = mkdtempSync(join(tmpdir(), "bb-cfg-"));
  try {
    const bad = join(dir, "late.yaml");
    writeFileSync(bad, minimal("gates:\n  enforce: agent\nmcp:\n  hook_deadline: 3s\n"));
    const r = spawnSync(process.execPath, [CLI, "check", "-c", bad], { encoding: "utf8" });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /late\.yaml:\d+:\d+: mcp\.hook_deadline: 3000 ms is not below/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("keygen: the nsec written to the file decodes to the printed npub; no overwrite", () => {
  const dir = mkdtempSync(join(tmpdir(), "bb-keygen-"));
  try {
    const out = join(dir, "agent.nsec");
    const stdout = execFileSync(process.execPath, [CLI, "keygen", "--out", out], { encoding: "utf8" });
    const printedNpub = /npub: (npub1\w+)/.exec(stdout)![1]!;
    const printedHex = /hex: +([0-9a-f]{64})/.exec(stdout)![1]!;
    assert.doesNotMatch(stdout, /nsec1/);
    const decoded = nip19.decode(readFileSync(out, "utf8").trim());
    assert.equal(decoded.type, "nsec");
    assert.equal(getPublicKey(decoded.data as Uint8Array), printedHex);
    assert.equal(nip19.npubEncode(printedHex), printedNpub);
    const again = spawnSync(process.execPath, [CLI, "keygen", "--out", out], { encoding: "utf8" });
    assert.equal(again.status, 1);
    assert.match(again.stderr, /refusing to overwrite/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("config/buzz-bridge.schema.json is fresh (regenerate with npm run schema)", () => {
  const committed = JSON.parse(readFileSync("config/buzz-bridge.schema.json", "utf8"));
  assert.deepEqual(committed, JSON.parse(JSON.stringify(jsonSchema())));
  assert.match(readFileSync("config/example.yaml", "utf8"), /\$schema=\.\/buzz-bridge\.schema\.json/);
});

test("an nsec given in config never appears in log output", () => {
  let out = "";
  const sink = new Writable({
    write(chunk, _enc, cb) {
      out += chunk.toString();
      cb();
    },
  });
  const log = createLogger({ destination: sink });
  const raw = { identity: { secret_key: nsec }, env: { BUZZ_PRIVATE_KEY: nsec } };
  log.info({ config: raw }, "loaded");
  log.info(raw, "raw");
  log.warn(`agent stderr: key is ${nsec}`);
  log.info({ nsec, token: "tok-123" }, "fields");
  assert.ok(out.length > 0);
  assert.ok(!out.includes(nsec), out);
  assert.ok(!out.includes("tok-123"), out);
});

test("the owner equal to the agent's own key is an error naming both keys", () => {
  const lines = problemsOf(`identity:\n  secret_key: ${nsec}\n  owner: ${nip19.npubEncode(hex)}\nrelay:\n  url: ws://127.0.0.1:7777\n`);
  assert.deepEqual(lines, [
    `t.yaml:3:10: identity.owner: the owner is the agent's own key (${nip19.npubEncode(hex)}, from identity.secret_key): the agent never answers itself, so it would answer nobody; set identity.owner to your own npub`,
  ]);
});
