/**
 * The real Claude Code agent in the agent sandbox: claude-agent-acp (a devDependency)
 * against the fake Anthropic API on 127.0.0.1, with `agent.sandbox: bubblewrap` and a real
 * MCP server, @modelcontextprotocol/server-filesystem on the channel's working directory,
 * behind the bridge's proxy. The model reads a file of the channel's cwd through the
 * filesystem server, then replies with `send_message`: the answer in the thread carries the
 * file's text, so the agent, the Claude CLI, the proxy, the MCP server and the link all
 * worked from inside the sandbox. bubblewrap must be installed (`.ci/run` does it).
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { World, REPO } from "../kit/world.js";
import { claudeAgentAcpBin, offlineClaudeEnv } from "./fixtures/claude-code.js";
import { threadRootOf } from "../src/nostr/events.js";
import { channelDirName } from "../src/agent/index.js";
import { startFakeLlm } from "./fixtures/fake-llm.js";

const FS_SERVER = join(REPO, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js");
const REPLY = "From the channel's notes:";
const NOTE = "release train leaves on thursday";

let w: World | undefined;
let api: { url: string; close(): Promise<void> } | undefined;
after(async () => {
  await w?.close();
  await api?.close();
});

/** This world's live processes (command line or environment names its directory) whose command line contains `needle`, with their pid namespace. */
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

test("claude-agent-acp in the bubblewrap sandbox answers a mention using server-filesystem on its cwd through the proxy", async () => {
  w = await World.create({ baseDir: "/var/tmp", channelName: "build-room" });
  const cwd = join(w.dir, "work", channelDirName({ id: w.channel, name: "build-room" }));
  mkdirSync(cwd, { recursive: true });
  writeFileSync(join(cwd, "notes.txt"), `${NOTE}\n`);
  api = await startFakeLlm({
    replyText: REPLY,
    readFirst: { tool: "read_text_file", input: { path: join(cwd, "notes.txt") } },
  });
  const d = await w.startDaemon({
    agent: {
      command: claudeAgentAcpBin(),
      args: [],
      env: offlineClaudeEnv(api.url),
      mode: "default",
      permissions: "allow",
      idle_timeout: "40s",
      sandbox: "bubblewrap",
    },
    // The stdio proxy inside the sandbox (Claude speaks MCP over HTTP too: mcp-http-claude.test.ts covers that slot).
    mcp: { transport: "stdio", servers: { files: { command: process.execPath, args: [FS_SERVER, cwd] } } },
  });
  await d.waitLog((l) => l.evt === "agent.sandbox" && l.state === "bubblewrap");

  const ev = await w.owner.post("@agent what do the notes say?");
  const reply = await w.waitReply(ev, 90_000);
  assert.ok(reply.content.startsWith(REPLY), `the model's send_message: ${reply.content}`);
  assert.ok(reply.content.includes(NOTE), `the reply carries the file's text, read by server-filesystem: ${reply.content}`);
  assert.equal(threadRootOf(reply), ev.id);

  const ours = readlinkSync("/proc/self/ns/pid");
  for (const [what, needle] of [
    ["the Claude agent", "claude-agent-acp"],
    ["the MCP proxy", "mcp-proxy"],
    ["server-filesystem", FS_SERVER],
  ] as const) {
    const found = processes(w, needle).filter((p) => p.pid !== d.proc.pid);
    assert.ok(found.length > 0, `${what} is running`);
    for (const p of found) assert.notEqual(p.pidns, ours, `${what} (pid ${p.pid}) runs in the sandbox's own pid namespace`);
  }
  assert.equal(await d.stop("SIGTERM"), 0);
});
