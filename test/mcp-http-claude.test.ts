/**
 * A real Claude agent over the daemon's HTTP MCP slot: @agentclientprotocol/claude-agent-acp
 * (a devDependency; it advertises `mcpCapabilities.http`) against the scripted model of
 * test/fixtures/fake-llm.ts on 127.0.0.1, in the bubblewrap sandbox, with `mcp.transport: http`. The model reads a file
 * of the channel's working directory through @modelcontextprotocol/server-filesystem — started
 * by the daemon, in the channel's sandbox — and replies with the built-in `send_message`;
 * the bridge's own stop gate runs after the turn. No network, no API key.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { World, REPO } from "../kit/world.js";
import { claudeAgentAcpBin, offlineClaudeEnv } from "./fixtures/claude-code.js";
import { gateServer, hookCalls } from "./fixtures/gates-helpers.js";
import { threadRootOf } from "../src/nostr/events.js";
import { channelDirName } from "../src/agent/index.js";
import { startFakeLlm, type FakeLlm } from "./fixtures/fake-llm.js";

const FS_SERVER = join(REPO, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js");
const REPLY = "From the channel's notes:";
const NOTE = "the release train leaves on thursday";

/** Live processes of this world (their command line or environment names its directory) running `needle`, with their pid namespace. */
function processes(world: World, needle: string): Array<{ pid: number; pidns: string }> {
  const out: Array<{ pid: number; pidns: string }> = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, "utf8");
      // bubblewrap itself, which names everything on its command line, starts outside.
      if (!cmd.includes(needle) || basename(cmd.split("\0")[0]!) === "bwrap") continue;
      if (!cmd.includes(world.dir) && !readFileSync(`/proc/${name}/environ`, "utf8").includes(world.dir)) continue;
      out.push({ pid: Number(name), pidns: readlinkSync(`/proc/${name}/ns/pid`) });
    } catch {
      /* gone */
    }
  }
  return out;
}

let w: World | undefined;
let api: FakeLlm | undefined;
after(async () => {
  await w?.close();
  await api?.close();
});

test("claude-agent-acp over HTTP: a daemon-started server in the sandbox, send_message and the bridge's gate, no mcp-proxy", async () => {
  w = await World.create({ baseDir: "/var/tmp", channelName: "build-room" });
  const cwd = join(w.dir, "work", channelDirName({ id: w.channel, name: "build-room" }));
  mkdirSync(cwd, { recursive: true });
  writeFileSync(join(cwd, "notes.txt"), `${NOTE}\n`);
  const gateCount = join(w.dir, "gate-count.txt");
  api = await startFakeLlm({
    replyText: REPLY,
    readFirst: { tool: "read_text_file", input: { path: join(cwd, "notes.txt") } },
  });
  const d = await w.startDaemon({
    agent: {
      command: claudeAgentAcpBin(),
      args: [],
      env: { ...offlineClaudeEnv(api.url), HOME: join(w.dir, "claude-home") },
      mode: "default",
      permissions: "allow",
      idle_timeout: "60s",
      sandbox: "bubblewrap",
    },
    mcp: {
      transport: "http",
      servers: {
        files: { command: process.execPath, args: [FS_SERVER, cwd] },
        ci: gateServer({ GATE_STOP_TEXT: "", GATE_COUNTER_FILE: gateCount }),
      },
    },
    gates: { enforce: "bridge" },
  });
  await d.waitLog((l) => l.evt === "agent.sandbox" && l.state === "bubblewrap");

  const ev = await w.owner.post("@agent what do the notes say?");
  const [reply] = await w.waitReplies(ev, 1, 120_000);
  assert.ok(reply!.content.startsWith(REPLY), `the model's send_message: ${reply!.content}`);
  assert.ok(reply!.content.includes(NOTE), `the reply carries the file's text, read by server-filesystem: ${reply!.content}`);
  assert.equal(threadRootOf(reply!), ev.id);
  const end = await d.waitLog((l) => l.evt === "turn.end" && l.scope === `${w!.channel}/${ev.id}`, 60_000);
  assert.equal(end.status, "answered");

  const offered = new Set(api!.requests.flatMap((r) => r.tools));
  for (const name of ["mcp__buzz__files_read_text_file", "mcp__buzz__send_message"])
    assert.ok(
      offered.has(name),
      `Claude offered its model ${name} (offered: ${[...offered].filter((n) => n.startsWith("mcp__")).join(", ")})`,
    );
  assert.equal(d.logs.find((l) => l.evt === "turn.session")?.mcp, "http", "the session's slot is the daemon's endpoint");
  assert.ok(
    d.logs.some((l) => l.evt === "mcp.http_connected"),
    "Claude connected to it",
  );
  assert.deepEqual(
    hookCalls(gateCount).map((c) => c[0]),
    ["_Stop"],
    "the bridge's _Stop ran once, on the daemon's aggregator",
  );

  const ours = readlinkSync("/proc/self/ns/pid");
  const fs = processes(w, FS_SERVER).filter((p) => p.pid !== d.proc.pid);
  assert.ok(fs.length > 0, "server-filesystem is running");
  for (const p of fs) assert.notEqual(p.pidns, ours, `server-filesystem (pid ${p.pid}) runs in a sandbox's own pid namespace`);
  assert.deepEqual(processes(w, "mcp-proxy"), [], "no mcp-proxy process");
  assert.equal(await d.stop("SIGTERM"), 0);
});
