/**
 * Files attached to a reply by the MCP slot they come through: the stdio proxy reads them
 * where the agent's files are and sends their bytes over the link; the daemon's own HTTP
 * endpoint never opens a path an agent names, so there a send_message with attachments is
 * refused with a message the agent can act on, and nothing is posted.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { directBuzzTools, type BuzzToolHandlers } from "../src/link/buzz-call.js";
import { fileReadingPort } from "../src/proxy/buzz-tools.js";

function handlers(sent: unknown[]): BuzzToolHandlers {
  return {
    sendMessage: async (a) => (sent.push(a), { event_id: "e".repeat(64) }),
    addReaction: async () => ({ event_id: "r".repeat(64) }),
    getMessages: async () => [],
    getThread: async () => [],
    getChannel: async () => ({}),
  };
}

test("over the daemon's HTTP slot, a send_message with attachments is refused, naming the stdio slot; without them it is sent", async () => {
  const sent: unknown[] = [];
  const failures: string[] = [];
  const tools = directBuzzTools(handlers(sent), (_tool, error) => failures.push(error));
  await assert.rejects(
    tools.callBuzzTool("send_message", { content: "the log", attachments: [{ path: "/etc/passwd" }] }),
    /attachments are sent through the stdio MCP slot only \(mcp\.transport: stdio\)/,
  );
  assert.deepEqual(sent, [], "nothing posted");
  await tools.callBuzzTool("send_message", { content: "the log is below" });
  assert.equal(sent.length, 1);
});

test("through the stdio proxy, the attached file's bytes cross the link, not its path", async () => {
  const dir = mkdtempSync(join(tmpdir(), "bb-attach-slot-"));
  const cwd = process.cwd();
  try {
    writeFileSync(join(dir, "build.log"), "step 1 ok\nstep 2 failed\n");
    process.chdir(dir);
    const calls: Array<{ tool: string; args: Record<string, unknown> }> = [];
    const port = fileReadingPort({ callBuzzTool: async (tool, args) => (calls.push({ tool, args }), { event_id: "e".repeat(64) }) }, 1024);
    await port.callBuzzTool("send_message", { content: "see the log", attachments: [{ path: "build.log" }] });
    const files = calls[0]!.args.files as Array<{ name: string; data: string }>;
    assert.equal(calls[0]!.args.attachments, undefined, "no path crosses the link");
    assert.deepEqual(
      files.map((f) => [f.name, Buffer.from(f.data, "base64").toString()]),
      [["build.log", "step 1 ok\nstep 2 failed\n"]],
    );
  } finally {
    process.chdir(cwd);
    rmSync(dir, { recursive: true, force: true });
  }
});
