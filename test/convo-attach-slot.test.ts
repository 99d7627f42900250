/**
 * Files attached to a reply by the MCP slot they come through: the stdio proxy reads them
 * where the agent's files are and sends their bytes over the link; the daemon's own HTTP
 * endpoint never opens a path an agent names, so there a reader run in the agent's sandbox
 * hands the bytes over (convo-attach-http.test.ts end to end), checked as the link checks
 * what a proxy sends.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { directBuzzTools, type BuzzToolHandlers } from "../src/link/buzz-call.js";
import { fileReadingPort } from "../src/proxy/buzz-tool-listing.js";
import { sandboxedAttachmentReader } from "../src/proxy/attachment-reader.js";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

function handlers(sent: unknown[]): BuzzToolHandlers {
  return {
    sendMessage: async (a) => (sent.push(a), { event_id: "e".repeat(64) }),
    addReaction: async () => ({ event_id: "r".repeat(64) }),
    getMessages: async () => [],
    getThread: async () => [],
    getChannel: async () => ({}),
  };
}

test("over the daemon's HTTP slot the files come from the reader in the agent's sandbox and are checked as the link checks them; without a reader, refused", async () => {
  const sent: Array<Record<string, unknown>> = [];
  const failures: string[] = [];
  const asked: unknown[] = [];
  const reader = async (args: Record<string, unknown>) => {
    asked.push(args.attachments);
    const { attachments: _, ...rest } = args;
    return { ...rest, files: [{ name: "build.log", mime: "text/plain", data: Buffer.from("step 2 failed\n").toString("base64") }] };
  };
  const tools = directBuzzTools(handlers(sent as unknown[]), (_tool, error) => failures.push(error), reader);
  await tools.callBuzzTool("send_message", { content: "the log", attachments: [{ path: "build.log" }] });
  assert.deepEqual(asked, [[{ path: "build.log" }]], "the reader is given the paths");
  assert.equal(sent[0]!.attachments, undefined, "no path reaches the handler");
  assert.deepEqual(
    (sent[0]!.files as Array<{ name: string; data: string }>).map((f) => [f.name, Buffer.from(f.data, "base64").toString()]),
    [["build.log", "step 2 failed\n"]],
  );

  const garbled = directBuzzTools(
    handlers(sent as unknown[]),
    (_tool, error) => failures.push(error),
    async (args) => ({
      content: args.content,
      files: [{ name: "x", mime: "text/plain", data: "not base64!" }],
    }),
  );
  await assert.rejects(
    garbled.callBuzzTool("send_message", { content: "x", attachments: [{ path: "x" }] }),
    /files\.0\.data: expected base64/,
  );

  const readerless = directBuzzTools(handlers(sent as unknown[]), (_tool, error) => failures.push(error));
  await assert.rejects(
    readerless.callBuzzTool("send_message", { content: "the log", attachments: [{ path: "/etc/passwd" }] }),
    /cannot read attached files here; send the message without them/,
  );
  assert.equal(sent.length, 1, "nothing more posted");
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

test("the reader's sandbox failing to set up (bubblewrap's own error, now and then under load) is tried once more; the file is read", async () => {
  const dir = mkdtempSync(join(tmpdir(), "bb-attach-flaky-"));
  try {
    writeFileSync(join(dir, "build.log"), "step 2 failed\n");
    const mark = join(dir, "failed-once");
    const flaky = fileURLToPath(new URL("./fixtures/flaky-sandbox.sh", import.meta.url));
    // The test runs the sources: the reader is started through tsx (resolved from here, not from the working directory).
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
    const read = sandboxedAttachmentReader({
      wrap: ({ command, args }) => ({
        command: "/bin/sh",
        args: [flaky, mark, command, "--import", tsx, ...args.map((a) => a.replace(/\.js$/, ".ts"))],
        cwd: dir,
      }),
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
      maxBytes: 1024,
    });
    const out = await read({ content: "the log", attachments: [{ path: "build.log" }] });
    assert.ok(existsSync(mark), "the first sandbox failed");
    const files = out.files as Array<{ name: string; data: string }>;
    assert.deepEqual(
      files.map((f) => [f.name, Buffer.from(f.data, "base64").toString()]),
      [["build.log", "step 2 failed\n"]],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
