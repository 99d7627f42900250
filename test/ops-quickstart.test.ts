/**
 * The README's quick start, followed step by step with the development relay standing in
 * for a real one (`buzz-bridge dev-relay --seed`, as the README says): keygen, copy
 * config/example.yaml and edit only relay, identity and agent, then `check`, `doctor` (every
 * line ✓) and `run`, which answers a mention posted with `buzz-bridge post`. Every command
 * runs from the config's directory without -c, as the README writes them.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { generateSecretKey, getPublicKey, nip19 } from "nostr-tools";
import { parseDocument, stringify } from "yaml";
import { createLogger } from "../src/base/log.js";
import { RelayClient } from "../src/relay/index.js";
import { KIND } from "../src/nostr/kinds.js";
import { CLI, REPO } from "./fixtures/world.js";
import { waitFor } from "./fixtures/wait.js";

const dir = mkdtempSync(join(tmpdir(), "bb-quickstart-"));
const owner = generateSecretKey();
const ownerNpub = nip19.npubEncode(getPublicKey(owner));
const CHANNEL = "6f1c2a4e-0000-4000-8000-00000000a11c";
const children: ChildProcess[] = [];
let relayUrl = "";
let agentNpub = "";

/** `buzz-bridge ARGS` from the config's directory, as a person types it. */
function cli(args: string[], timeout = 90_000) {
  const env = { ...process.env };
  delete env.BUZZ_BRIDGE_CONFIG;
  delete env.BUZZ_PRIVATE_KEY;
  delete env.STATE_DIRECTORY;
  return spawnSync(process.execPath, [CLI, ...args], { cwd: dir, env, encoding: "utf8", timeout });
}

before(async () => {
  // buzz-bridge keygen --out agent.nsec
  const kg = cli(["keygen", "--out", "agent.nsec"]);
  assert.equal(kg.status, 0, kg.stderr);
  agentNpub = /npub: (npub1\w+)/.exec(kg.stdout)![1]!;

  // The dev relay standing in: the agent and the owner are members of one channel.
  writeFileSync(
    join(dir, "seed.yaml"),
    stringify({
      members: [agentNpub, ownerNpub],
      channels: [{ id: CHANNEL, name: "general", about: "Where the team talks", members: [agentNpub, ownerNpub] }],
    }),
  );
  const relay = spawn(process.execPath, [CLI, "dev-relay", "--port", "0", "--seed", "seed.yaml"], {
    cwd: dir,
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(relay);
  relayUrl = await new Promise<string>((resolve, reject) => {
    createInterface({ input: relay.stdout! }).once("line", resolve);
    relay.once("exit", (code) => reject(new Error(`dev-relay exited ${code}`)));
  });

  // cp config/example.yaml buzz-bridge.yaml, then edit relay.url, identity and agent only.
  copyFileSync(join(REPO, "config", "example.yaml"), join(dir, "buzz-bridge.yaml"));
  const doc = parseDocument(readFileSync(join(dir, "buzz-bridge.yaml"), "utf8"));
  doc.setIn(["relay", "url"], relayUrl);
  doc.deleteIn(["identity", "secret_key"]);
  doc.setIn(["identity", "secret_key_file"], "agent.nsec");
  doc.setIn(["identity", "owner"], ownerNpub);
  doc.setIn(["agent", "command"], "buzz-bridge");
  doc.setIn(["agent", "args"], doc.createNode(["demo-agent"]));
  writeFileSync(join(dir, "buzz-bridge.yaml"), doc.toString());
});

after(() => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

test("check accepts the edited example and prints the effective settings", () => {
  const r = cli(["check"]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`# ${join(dir, "buzz-bridge.yaml")}: valid`));
  assert.match(r.stdout, new RegExp(`state_dir: ${join(dir, "buzz-bridge-state")}$`, "m"), "state beside the config");
});

test("doctor passes every check on the edited example (no ✗ for MCP servers nobody installed)", () => {
  const r = cli(["doctor", "--timeout", "30s"]);
  const table = r.stdout
    .split("\n\n")[0]!
    .split("\n")
    .filter((l) => /^[✓✗–] /.test(l));
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.ok(table.length >= 7, r.stdout);
  assert.deepEqual(
    table.filter((l) => !l.startsWith("✓")),
    [],
    r.stdout,
  );
  for (const name of ["config", "state", "relay", "auth", "channels", "agent", "agent cwd"]) {
    assert.ok(
      table.some((l) => new RegExp(`^✓ ${name}\\s`).test(l)),
      `${name} in:\n${r.stdout}`,
    );
  }
  assert.match(r.stdout, /#general \(stream, 6f1c2a4e-0000-4000-8000-00000000a11c\)/);
});

test("run answers a mention posted with buzz-bridge post", async () => {
  const daemon = spawn(process.execPath, [CLI, "run"], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  children.push(daemon);
  let out = "";
  daemon.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  daemon.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const started = Date.now();
  const isStarted = () => {
    assert.equal(daemon.exitCode, null, out.slice(-3000));
    return out.includes('"evt":"daemon.started"');
  };
  await waitFor(isStarted, { timeoutMs: 90_000, intervalMs: 100, what: () => `daemon.started; output:\n${out.slice(-3000)}` });
  const post = cli([
    "post",
    "--relay",
    relayUrl,
    "--nsec",
    nip19.nsecEncode(owner),
    "--channel",
    CHANNEL,
    "--mention",
    agentNpub,
    "@agent hello",
  ]);
  assert.equal(post.status, 0, post.stderr);
  const eventId = post.stdout
    .trim()
    .split(/\s+/)
    .find((w) => /^[0-9a-f]{64}$/.test(w));
  assert.ok(eventId, post.stdout);

  const reader = new RelayClient({ url: relayUrl, secretKey: owner, logger: createLogger({ level: "silent" }) });
  await reader.start();
  try {
    const agentPk = nip19.decode(agentNpub).data as string;
    const reply = async () => {
      const found = await reader.query([{ kinds: [KIND.message], authors: [agentPk], "#e": [eventId] }]).catch(() => []);
      return found.length > 0 && found;
    };
    const replies = await waitFor(reply, {
      timeoutMs: 150_000 - (Date.now() - started),
      intervalMs: 200,
      what: () => `a reply; daemon output:\n${out.slice(-3000)}`,
    });
    assert.equal(replies.length, 1);
    assert.ok(existsSync(join(dir, "buzz-bridge-state", "queue.db")), "state beside the config, as check said");
  } finally {
    reader.stop();
    daemon.kill("SIGTERM");
    await new Promise((r) => daemon.once("exit", r));
  }
  assert.equal(daemon.exitCode, 0, out.slice(-2000));
});
