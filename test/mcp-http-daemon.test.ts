/**
 * The MCP slot served by the daemon over Streamable HTTP, end to end: a daemon subprocess,
 * the demo agent advertising `mcpCapabilities.http` (DEMO_AGENT_MCP_HTTP=1) and connecting
 * with the MCP SDK's HTTP client, real MCP servers started by the daemon, the dev relay.
 * What a person sees: the agent's tools (a downstream server's, the merged `_Stop`, the
 * built-in buzz tools) answer as they do through `mcp-proxy`, the bridge's own stop gates
 * run, and no proxy process is started for the session.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { World, type DaemonProc } from "../kit/world.js";
import { ask, assertAnsweredOnce } from "../kit/channel-oracle.js";
import { gateServer, hookCalls } from "./fixtures/gates-helpers.js";
import { KIND } from "../src/nostr/kinds.js";
import { waitFor } from "../kit/wait.js";

let w: World;
let d: DaemonProc;
let shellCount: string;
let ciCount: string;

/** The command lines of the daemon's descendants. */
function descendants(pid: number): string[] {
  const out: string[] = [];
  const walk = (p: number) => {
    let kids: string[] = [];
    try {
      kids = readFileSync(`/proc/${p}/task/${p}/children`, "utf8").trim().split(/\s+/).filter(Boolean);
    } catch {
      return;
    }
    for (const k of kids) {
      try {
        out.push(readFileSync(`/proc/${k}/cmdline`, "utf8").split("\0").join(" "));
      } catch {
        continue;
      }
      walk(Number(k));
    }
  };
  walk(pid);
  return out;
}

before(async () => {
  w = await World.create({ channelName: "http-room" });
  shellCount = join(w.dir, "shell-count.txt");
  ciCount = join(w.dir, "ci-count.txt");
  d = await w.startDaemon({
    agent: { env: { DEMO_AGENT_MCP_HTTP: "1" } },
    mcp: {
      servers: {
        dev: {
          command: process.execPath,
          args: [join(import.meta.dirname, "fixtures", "gate-server.mjs")],
          env: { GATE_TOOLS: "shell", GATE_NO_STOP: "1", GATE_COUNTER_FILE: shellCount },
          prefix: false,
        },
        ci: gateServer({ GATE_STOP_TEXT: "CI is red: run #7 failed.", GATE_OBJECT_TIMES: "1", GATE_COUNTER_FILE: ciCount }),
      },
    },
    gates: { enforce: "bridge", max_rejections: 2 },
  });
});
after(() => w.close());

test("over HTTP: a downstream tool, the merged _Stop, the built-in tools and the bridge's gate, with no mcp-proxy process", async () => {
  const asked = await ask(w.owner, '#stop-hook\n#tool shell {"text":"ls -la"}\n#tool get_channel {}', { channel: w.channel });
  const end = await d.waitLog((l) => l.evt === "turn.end" && l.scope === `${w.channel}/${asked.event.id}`, 60_000);
  assert.equal(end.status, "answered");
  const replies = await w.waitEvents({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [asked.event.id] }, (evs) =>
    evs.some((e) => e.content.includes(asked.marker)),
  );
  const answer = replies.find((e) => e.content.includes(asked.marker))!.content;
  assert.match(answer, /tool shell: shell: ls -la/, "the downstream server's tool, unprefixed as configured");
  assert.match(answer, /tool get_channel: .*"name":"http-room"/, "the built-in tool acts in the session's channel");
  assert.match(answer, /_Stop: "\[ci\] CI is red: run #7 failed\."/, "the agent's own _Stop call gets the merged answer");

  const session = d.logs.find((l) => l.evt === "turn.session" && l.scope === end.scope);
  assert.equal(session?.mcp, "http", "the session's slot is the daemon's HTTP endpoint");
  assert.ok(
    d.logs.some((l) => l.evt === "mcp.http_connected"),
    "the agent connected over HTTP",
  );
  assert.ok(!d.logs.some((l) => l.evt === "link.connected"), "no proxy connected over the link");
  const procs = descendants(d.proc.pid!);
  assert.ok(
    procs.some((c) => c.includes("gate-server.mjs")),
    `the daemon started the servers: ${procs.join(" | ")}`,
  );
  assert.ok(!procs.some((c) => c.includes("mcp-proxy")), `no mcp-proxy process: ${procs.join(" | ")}`);
  // The agent's _Stop objected once (that call counts); the bridge's own _Stop round after the turn allows.
  assert.deepEqual(
    hookCalls(ciCount).map((c) => c[0]),
    ["_Stop", "_Stop"],
    "one _Stop by the agent, one by the bridge's gate",
  );
  await assertAnsweredOnce(w, [asked], { timeoutMs: 30_000 });
});

test("the daemon SIGKILLed while its agent holds an HTTP session: after the restart the turn runs once more, on the new endpoint, and is answered once", async () => {
  const r = await World.create({ channelName: "restart-room" });
  try {
    const count = join(r.dir, "shell-count.txt");
    // The shell tool answers only once this file exists: the agent is held inside its tool
    // call (its reply not yet written) for as long as the test needs, whatever the machine's speed.
    const release = join(r.dir, "release-shell");
    const calls = () =>
      existsSync(count)
        ? readFileSync(count, "utf8")
            .split("\n")
            .filter((l) => l.startsWith("shell")).length
        : 0;
    const first = await r.startDaemon({
      // DEMO_AGENT_RESUME: after the restart the agent reopens its session, pointed at the new daemon's endpoint.
      agent: { env: { DEMO_AGENT_MCP_HTTP: "1", DEMO_AGENT_RESUME: "1" } },
      mcp: {
        servers: {
          dev: {
            ...gateServer({ GATE_TOOLS: "shell", GATE_NO_STOP: "1", GATE_COUNTER_FILE: count, GATE_TOOL_HOLD_FILE: release }),
            prefix: false,
          },
        },
      },
    });
    const asked = await ask(r.owner, '#tool shell {"text":"half-way"}', { channel: r.channel });
    // The agent has called a tool through its endpoint and is still in the turn.
    await waitFor(() => calls() === 1, { timeoutMs: 30_000, what: "the agent's first shell call over HTTP" });
    first.proc.kill("SIGKILL");
    await first.exited;
    writeFileSync(release, "");
    const again = await r.startDaemon({}, { configFile: first.configFile });
    const end = await again.waitLog((l) => l.evt === "turn.end" && l.scope === `${r.channel}/${asked.event.id}`, 60_000);
    assert.equal(end.status, "answered");
    const open = again.logs.find((l) => l.evt === "agent.session_open" && l.mcp === "http");
    assert.ok(open, "the replayed turn's session reached its MCP slot over HTTP again");
    assert.equal(open.resumed, true, "the agent reopened its session with the new daemon's endpoint");
    assert.equal(calls(), 2, "the tool ran once per attempt: before the kill and in the replay");
    await assertAnsweredOnce(r, [asked], { timeoutMs: 30_000 });
  } finally {
    await r.close();
  }
});
