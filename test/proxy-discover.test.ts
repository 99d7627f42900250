/**
 * Both MCP eras on the stdio slot: a 2026-07-28 client opens with `server/discover` on a
 * throwaway copy of the proxy (the TypeScript SDK's `versionNegotiation: 'auto'` probe), is
 * answered at once with the error that makes it fall back (-32601, Method not found), and
 * then opens the real session with `initialize`. Judged by the answer on the wire and by a
 * downstream server whose start leaves a line in a file: started once, by the real session.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { stringify } from "yaml";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CLI, GATE } from "./fixtures/proxy-harness.js";
import { waitFor } from "../kit/wait.js";

const dir = mkdtempSync(join(tmpdir(), "proxy-discover-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("a server/discover probe is answered Method not found at once and starts nothing; the initialize session starts each server once", async () => {
  const starts = join(dir, "starts");
  const manifest = join(dir, "manifest.yaml");
  // The server's start is its side effect: one line per process started.
  writeFileSync(
    manifest,
    stringify({
      servers: {
        tools: {
          command: "sh",
          args: ["-c", `echo started >> '${starts}'; exec '${process.execPath}' '${GATE}'`],
          env: { GATE_TOOLS: "echo", GATE_NO_STOP: "1" },
          prefix: false,
        },
      },
    }),
  );
  const env = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" };

  // The throwaway copy: server/discover alone, as the first and only message.
  const probe = spawn(process.execPath, [CLI, "mcp-proxy", "--manifest", manifest], { env, stdio: ["pipe", "pipe", "ignore"] });
  after(() => probe.kill("SIGKILL"));
  const answers = createInterface({ input: probe.stdout! });
  const first = new Promise<string>((resolve) => answers.once("line", resolve));
  probe.stdin!.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: {} } })}\n`);
  const answer = JSON.parse(await first) as { id: number; error?: { code: number; message: string }; result?: unknown };
  assert.equal(answer.id, 1);
  assert.equal(answer.result, undefined);
  assert.equal(answer.error?.code, -32601, "Method not found: the client falls back to initialize");

  // The real session, opened the way today's clients do.
  const client = new Client({ name: "discover-test", version: "0" });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, "mcp-proxy", "--manifest", manifest], env }));
  after(() => client.close());
  const r = await client.callTool({ name: "echo", arguments: { text: "both eras" } });
  assert.deepEqual(r.content, [{ type: "text", text: "echo: both eras" }]);
  await waitFor(() => existsSync(starts));

  // The probe copy is still running and has had every chance to start its servers.
  assert.equal(probe.exitCode, null, "the probe copy is still up");
  assert.deepEqual(readFileSync(starts, "utf8").trim().split("\n"), ["started"], "one server start: the real session's");
});
