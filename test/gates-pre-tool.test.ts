/**
 * `_PreToolUse` end to end: the demo agent, in a daemon, calls a real MCP tool whose side
 * effect is a file, through the stdio proxy and through the daemon's HTTP slot, with a real
 * gate server (MCP stdio, `pre_tool: block`) that objects to one call and allows another; and
 * asks permission (ACP `session/request_permission`) for one of its own tools, which the same
 * gate blocks although `agent.permissions` is `allow`. Judged by the files and by what the
 * agent was told (its reply in the channel).
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { World, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { GATE_SERVER, gateServer } from "./fixtures/gates-helpers.js";

for (const transport of ["stdio", "http"] as const) {
  describe(`pre-tool gates in a daemon (${transport})`, () => {
    let w: World;
    let d: DaemonProc;
    before(async () => {
      w = await World.create({ channelName: `pre-tool-${transport}` });
      d = await w.startDaemon({
        agent: { permissions: "allow", ...(transport === "http" ? { env: { DEMO_AGENT_MCP_HTTP: "1" } } : {}) },
        mcp: {
          transport,
          servers: {
            files: { command: process.execPath, args: [GATE_SERVER], env: { GATE_WRITE_TOOL: "1", GATE_NO_STOP: "1" }, prefix: false },
            policy: {
              ...gateServer({
                GATE_NO_STOP: "1",
                GATE_PRE_TOOL: "1",
                GATE_PRE_TOOL_OBJECT: "forbidden|touch a file",
                // Not the agent's send_message: its reply quotes the question, paths and all.
                GATE_PRE_TOOL_ONLY: "write_file,demo: touch a file",
                GATE_PRE_TOOL_TEXT: "not on my watch",
              }),
              pre_tool: "block",
            },
          },
        },
      });
    });
    after(() => w?.close());

    test("the gate allows one write (the file is there) and blocks another (no file; the agent is told why); the agent's own tool is refused", async () => {
      const ok = join(w.dir, `ok-${transport}.txt`);
      const forbidden = join(w.dir, `forbidden-${transport}.txt`);
      const ev = await w.owner.post(
        `@agent #tool write_file ${JSON.stringify({ path: ok, text: "fine" })}\n#tool write_file ${JSON.stringify({ path: forbidden, text: "no" })}\n#permission`,
      );
      const [reply] = await w.waitEvents({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] }, (e) =>
        e.some((x) => x.content.includes("permission:")),
      );
      const text = reply!.content;
      assert.equal(readFileSync(ok, "utf8"), "fine");
      assert.equal(existsSync(forbidden), false, "the objected call was not made");
      assert.match(text, /tool write_file: wrote 4 bytes/);
      assert.match(text, /tool write_file: error: \[policy\] not on my watch/, "the agent was told the gate's objection, as a tool error");
      assert.match(text, /permission: denied \(demo-no\)/, "the gate's block became a rejection, though agent.permissions is allow");
      const denied = await d.waitLog((l) => l.evt === "agent.permission" && l.by === "pre_tool");
      assert.equal(denied.verdict, "denied");
      const preTool = (l: Record<string, unknown>) => (transport === "http" ? l : (l.proxy as Record<string, unknown> | undefined)) ?? {};
      await d.waitLog((l) => preTool(l).evt === "hook.pre_tool" && preTool(l).verdict === "block" && preTool(l).server === "files");
      await d.waitLog((l) => preTool(l).evt === "hook.pre_tool" && preTool(l).verdict === "block" && preTool(l).server === "agent");
    });
  });
}
