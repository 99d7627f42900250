/**
 * `mcp.servers.<name>.hold_replies`: only a `stop: wait` server approves, so the key on any
 * other server is refused with an error naming it and what to do; default false.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { generateSecretKey, nip19 } from "nostr-tools";
import { ConfigError, loadConfigText } from "../../src/config/load.js";

const nsec = nip19.nsecEncode(generateSecretKey());
const head = `identity:\n  secret_key: ${nsec}\nrelay:\n  url: ws://127.0.0.1:7777\nagent:\n  command: demo\n`;
const load = (server: string) => loadConfigText(`${head}mcp:\n  servers:\n    approval:\n      command: gate\n${server}`, "t.yaml", {});

test("hold_replies on a stop: reprompt server is refused, naming the key and the fix", () => {
  for (const server of ["      hold_replies: true\n", "      stop: reprompt\n      hold_replies: true\n"]) {
    assert.throws(
      () => load(server),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError, String(err));
        assert.match(err.message, /mcp\.servers\.approval\.hold_replies/);
        assert.match(err.message, /set stop: wait/);
        return true;
      },
    );
  }
});

test("hold_replies on a stop: wait server is taken; left out it is false", () => {
  assert.equal(load("      stop: wait\n      hold_replies: true\n").config.mcp.servers.approval!.hold_replies, true);
  assert.equal(load("      stop: wait\n").config.mcp.servers.approval!.hold_replies, false);
});

test("hold_replies where the bridge does not enforce the stop gates (gates.enforce agent or off, auto with buzz-agent) is refused: the posts would go out unheld", () => {
  const wait = "      stop: wait\n      hold_replies: true\n";
  for (const [gates, agent, how] of [
    ["gates:\n  enforce: agent\n", "", /gates\.enforce is agent/],
    ["gates:\n  enforce: off\n", "", /gates\.enforce is off/],
    ["", "buzz-agent", /gates\.enforce is auto and the agent is buzz-agent/],
  ] as const) {
    const text = `${head.replace("command: demo", `command: ${agent || "demo"}`)}${gates}mcp:\n  servers:\n    approval:\n      command: gate\n${wait}`;
    assert.throws(
      () => loadConfigText(text, "t.yaml", {}),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError, String(err));
        assert.match(err.message, /t\.yaml:\d+:\d+: mcp\.servers\.approval\.hold_replies/);
        assert.match(err.message, how);
        assert.match(err.message, /set gates\.enforce: bridge, or remove hold_replies/);
        return true;
      },
    );
  }
  const bridge = `${head}gates:\n  enforce: bridge\nmcp:\n  servers:\n    approval:\n      command: gate\n${wait}`;
  assert.equal(loadConfigText(bridge, "t.yaml", {}).config.mcp.servers.approval!.hold_replies, true);
});
