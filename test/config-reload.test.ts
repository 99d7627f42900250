/**
 * A reload (SIGHUP) against the running config: what it refuses, what applies now and
 * what keeps its running value until a restart (docs/architecture.md §2, config/).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { generateSecretKey, nip19 } from "nostr-tools";
import { loadConfigText } from "../src/config/load.js";
import { planReload } from "../src/config/reload.js";

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

test("the same file reloads whole, with nothing deferred", () => {
  const running = load();
  const plan = planReload(running, load());
  assert.ok(plan.ok);
  assert.equal(plan.deferred, false);
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
  assert.equal(plan.deferred, false);
  assert.equal(plan.config.defaults.respond_to, "anyone");
});

test("agent settings, the owner and the heartbeat keep their running values and are reported as deferred", () => {
  const running = load();
  const next = load(
    { identity: `identity:\n  secret_key: ${nsec}\n  owner: ${"b".repeat(64)}\n`, agent: "agent:\n  command: other-agent\n" },
    "defaults:\n  respond_to: anyone\n",
  );
  const plan = planReload(running, next);
  assert.ok(plan.ok);
  assert.equal(plan.deferred, true);
  assert.equal(plan.config.agent.command, "buzz-agent");
  assert.equal(plan.config.identity.owner, OWNER);
  assert.equal(plan.config.defaults.respond_to, "anyone");
});
