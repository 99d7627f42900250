/**
 * A reload (SIGHUP) against the running config: what it refuses, what applies now and
 * what keeps its running value until a restart (docs/architecture.md §2, config/).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { generateSecretKey, nip19 } from "nostr-tools";
import { loadConfigText } from "../../src/config/load.js";
import { planReload } from "../../src/config/reload.js";

const nsec = nip19.nsecEncode(generateSecretKey());
const OWNER = "a".repeat(64);
const BASE = {
  identity: `identity:\n  secret_key: ${nsec}\n  owner: ${OWNER}\n`,
  relay: "relay:\n  url: ws://127.0.0.1:7777\n",
  agent: "agent:\n  command: buzz-agent\n",
};

function load(over: Partial<Record<keyof typeof BASE, string>> = {}, extra = "") {
  const { pubkey, config } = loadConfigText(Object.values({ ...BASE, ...over }).join("") + extra, "t.yaml", {});
  return { pubkey, config };
}

test("the same file reloads whole, with nothing needing a restart", () => {
  const running = load();
  const plan = planReload(running, load());
  assert.ok(plan.ok);
  assert.deepEqual(plan.needsRestart, []);
  assert.equal(JSON.stringify(plan.config), JSON.stringify(running.config));
});

test("a new identity, relay url or state_dir is refused, each named", () => {
  const running = load();
  const other = nip19.nsecEncode(generateSecretKey());
  const plan = planReload(
    running,
    load(
      { identity: `identity:\n  secret_key: ${other}\n  owner: ${OWNER}\n`, relay: "relay:\n  url: ws://127.0.0.1:7778\n" },
      "state_dir: /tmp/elsewhere\n",
    ),
  );
  assert.deepEqual(plan, { ok: false, needsRestart: ["identity", "relay.url", "state_dir"] });
});

test("policy changes apply now", () => {
  const running = load();
  const plan = planReload(running, load({}, "defaults:\n  respond_to: anyone\n"));
  assert.ok(plan.ok);
  assert.deepEqual(plan.needsRestart, []);
  assert.equal(plan.config.defaults.respond_to, "anyone");
});

test("agent settings, the owner and the heartbeat keep their running values, each named as needing a restart", () => {
  const running = load();
  const next = load(
    { identity: `identity:\n  secret_key: ${nsec}\n  owner: ${"b".repeat(64)}\n`, agent: "agent:\n  command: other-agent\n" },
    "defaults:\n  respond_to: anyone\n",
  );
  const plan = planReload(running, next);
  assert.ok(plan.ok);
  assert.deepEqual(plan.needsRestart, ["identity.owner", "agent.command"]);
  assert.equal(plan.config.agent.command, "buzz-agent");
  assert.equal(plan.config.identity.owner, OWNER);
  assert.equal(plan.config.defaults.respond_to, "anyone");
});

test("every changed key that cannot apply live is named, and keeps its running value: nothing changes silently", () => {
  const running = load({}, "queue:\n  max_attempts: 3\nlog:\n  level: info\n");
  const next = load(
    { relay: "relay:\n  url: ws://127.0.0.1:7777\n  presence: false\n  typing: false\n" },
    [
      'http:\n  listen: "127.0.0.1:9464"', // added: nothing would listen until a restart
      "queue:\n  max_attempts: 5",
      "log:\n  level: debug",
      "gates:\n  wait_poll: 3s\n  enforce: bridge",
      "shutdown_grace: 10s",
      "mcp:\n  servers:\n    ci: { command: ci-gate }",
      "heartbeat:\n  every: 30m\n  channel: 6f1c2a4e-0000-4000-8000-000000000001",
      "",
    ].join("\n"),
  );
  const plan = planReload(running, next);
  assert.ok(plan.ok);
  assert.deepEqual(
    plan.needsRestart.sort(),
    ["gates.enforce", "heartbeat", "http", "log.level", "queue.max_attempts", "relay.presence"].sort(),
  );
  assert.equal(plan.config.http, undefined, "http stays off until a restart");
  assert.equal(plan.config.queue.max_attempts, 3);
  assert.equal(plan.config.log.level, "info");
  assert.equal(plan.config.relay.presence, true);
  assert.equal(plan.config.gates.enforce, "auto");
  assert.equal(plan.config.heartbeat, undefined);
  // Applied now, to new turns:
  assert.equal(plan.config.relay.typing, false);
  assert.equal(plan.config.gates.wait_poll, 3000);
  assert.equal(plan.config.shutdown_grace, 10_000);
  assert.deepEqual(Object.keys(plan.config.mcp.servers), ["ci"]);
});
