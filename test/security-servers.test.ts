/**
 * What an agent and a downstream MCP server can do to the daemon through their own
 * channels (docs/security.md): a tool call that never ends is cut at its server's
 * `timeout` (10m unless the server sets one) with an error the agent can act on, and
 * what they write on stderr is logged as their text under the daemon's `proxy.log` /
 * `agent.stderr`, never as a daemon event of their choosing. The real daemon, dev relay,
 * demo agent (`#tool`, `#stderr`), proxy and MCP servers.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import { World, type DaemonProc } from "../kit/world.js";
import { gate } from "./fixtures/proxy-harness.js";
import { KIND } from "../src/nostr/kinds.js";
import { loadConfigText } from "../src/config/load.js";
import { manifestFromConfig } from "../src/contract/manifest.js";

let w: World;
let d: DaemonProc;
const FAKE = "f".repeat(64);
/** What an agent or a server writes to look like the daemon accepting a mention, fatally. */
const SPOOF = JSON.stringify({ level: "fatal", name: "mcp-proxy", evt: "gate.accepted", event: FAKE, msg: "mention accepted" });

before(async () => {
  w = await World.create({ channelName: "servers-room" });
  d = await w.startDaemon({
    relay: { presence: false },
    mcp: {
      servers: {
        slow: gate({ GATE_NO_STOP: "1" }, { timeout: "1s" }),
        // Writes the spoof on its stderr and exits: the proxy reports it failed, with its stderr.
        liar: { command: process.execPath, args: ["-e", `process.stderr.write(${JSON.stringify(`${SPOOF}\n`)}); process.exit(1)`] },
      },
    },
  });
});
after(() => w.close());

async function answer(text: string): Promise<Event> {
  const ev = await w.owner.post(`@agent ${text}`);
  await w.waitReaction(ev, "✅", 60_000);
  const replies = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] });
  assert.equal(replies.length, 1);
  return replies[0]!;
}

test("a tool call that outlives its server's timeout ends with an error naming the key; the server keeps serving", async () => {
  const reply = await answer('#tool slow_sleep {"ms": 60000}');
  assert.match(
    reply.content,
    /tool slow_sleep: (error: )?'sleep' on MCP server 'slow' timed out after 1000 ms \(its timeout, mcp\.servers\.slow\.timeout\) and was cancelled/,
  );
  const again = await answer("#tool slow_pid {}");
  assert.match(again.content, /tool slow_pid: \d+/);
});

test("a server that sets no timeout gets 10m: the manifest a session's proxy is given says so", () => {
  const loaded = loadConfigText(
    `identity: { secret_key: "${"1".repeat(64)}" }\nrelay: { url: "ws://127.0.0.1:1" }\nmcp: { servers: { dev: { command: dev-mcp } } }\n`,
    "/tmp/t.yaml",
  );
  assert.equal(manifestFromConfig(loaded.config.mcp).servers[0]!.timeout, 10 * 60_000);
});

test("stderr lines posing as the daemon's are logged as the agent's and the server's text, never as daemon events", async () => {
  await answer(`#stderr ${SPOOF}`);
  // A later mention answered: whatever the spoofs could have caused would show by now.
  await answer("are you still there?");
  assert.deepEqual(
    d.logs.filter((l) => l.event === FAKE && l.evt !== "proxy.log").map((l) => `${l.level} ${l.evt}`),
    [],
    "no daemon line about the fake event",
  );
  assert.deepEqual(
    d.logs.filter((l) => l.level === "fatal").map((l) => l.evt),
    [],
  );
  const spoofed = d.logs.filter((l) => l.evt === "proxy.log" && (l.proxy as { event?: string }).event === FAKE);
  assert.ok(spoofed.length >= 1, "the agent's line is in the log, as its own");
  for (const l of spoofed) {
    assert.equal(l.level, "warn", "capped below the daemon's own error and fatal");
    assert.equal((l.proxy as { evt?: string }).evt, "gate.accepted");
  }
  const fromServer = d.logs.filter(
    (l) =>
      l.evt === "proxy.log" &&
      (l.proxy as { evt?: string }).evt === "proxy.server_failed" &&
      (l.proxy as { server?: string }).server === "liar",
  );
  assert.ok(fromServer.length >= 1, "the proxy's report of the server's failure");
  assert.ok(
    fromServer.every((l) => String((l.proxy as { stderr?: string }).stderr).includes('"evt":"gate.accepted"')),
    "its stderr is text in it",
  );
  // The proxy's genuine lines stay useful: its start in each session, under the session's scope.
  assert.ok(
    d.logs.some((l) => l.evt === "proxy.log" && (l.proxy as { evt?: string }).evt === "proxy.start" && typeof l.scope === "string"),
  );
});
