/**
 * Bad downstream servers and bad calls: each gets a clear error
 * result or log line, the proxy keeps serving the rest, hooks stay on time.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { stringify } from "yaml";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { CallToolResultSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { FastStdioClientTransport } from "../src/proxy/line-transport.js";
import { CLI, REPO, TRANSPORTS, gate, startProxy, textOf, type RunningProxy } from "./fixtures/proxy-harness.js";
import { waitFor } from "../kit/wait.js";
import { NAME_BUDGET } from "../src/proxy/naming.js";

const BAD = join(REPO, "test", "fixtures", "bad-server.mjs");
const bad = (mode: string, env: Record<string, string> = {}) => ({
  command: process.execPath,
  args: [BAD],
  env: { BAD_MODE: mode, ...env },
});

for (const transport of TRANSPORTS) {
  describe(`misbehaving downstream servers (${transport})`, () => {
    let p: RunningProxy;
    before(async () => {
      p = await startProxy(
        {
          servers: {
            good: gate({ GATE_STOP_TEXT: "good objects" }),
            exits: bad("exit"),
            garbage: bad("garbage"),
            names: bad("names"),
            missing: { command: "buzz-no-such-command-anywhere" },
          },
          hook_deadline: "1s",
        },
        {},
        { transport },
      );
    });
    after(() => p?.close());

    test("tools/list answers with the servers that work; failures are logged with their stderr", async () => {
      const names = (await p.client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes("good_pid"));
      assert.ok(names.includes("garbage_ok"), "garbage on stdout does not sink a working server");
      assert.ok(!names.some((n) => n.startsWith("exits_") || n.startsWith("missing_")));
      const exits = await p.waitLog((l) => l.evt === "proxy.server_failed" && l.server === "exits");
      assert.match(String(exits.stderr), /missing configuration FOO_TOKEN/);
      await p.waitLog((l) => l.evt === "proxy.server_failed" && l.server === "missing");
      await p.waitLog((l) => l.evt === "proxy.server_error" && l.server === "garbage"); // garbage lines are logged
    });

    test("invalid downstream tool names are made valid, never dropped silently", async () => {
      const names = (await p.client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith("names_"));
      assert.equal(names.length, 5);
      for (const n of names) {
        assert.match(n, /^[A-Za-z0-9_-]+$/);
        assert.ok(!n.includes("__") && n.length <= NAME_BUDGET, n);
      }
      assert.equal(textOf(await p.call("names_has-space")), "has space");
      assert.equal(textOf(await p.call("names_a_b")), "a__b");
    });

    test("calls to a server that failed are clear isError results; hooks still answer", async () => {
      const r = await p.call("exits_ok");
      assert.equal(r.isError, true);
      assert.equal(textOf(await p.call("_Stop")), "[good] good objects");
    });
  });

  describe(`a server that never answers (${transport})`, () => {
    let p: RunningProxy;
    before(async () => {
      p = await startProxy({ servers: { silent: bad("silent") }, list_timeout: "1s" }, {}, { transport });
    });
    after(() => p?.close());

    test("tools/list answers after list_timeout without it, and says which server it gave up on", async () => {
      const names = (await p.client.listTools()).tools.map((t) => t.name);
      assert.ok(!names.some((n) => n.startsWith("silent_")));
      const timeout = await p.waitLog((l) => l.evt === "proxy.list_timeout");
      assert.deepEqual(timeout?.waiting, ["silent"]);
      const r = await p.call("silent_anything");
      assert.equal(r.isError, true);
    });
  });

  describe(`list_changed from a downstream (${transport})`, () => {
    let p: RunningProxy;
    before(async () => {
      p = await startProxy({ servers: { dyn: gate({ GATE_NO_STOP: "1" }) } }, {}, { transport });
    });
    after(() => p?.close());

    test("a downstream's new tool is announced upstream and listed", async () => {
      let changed = 0;
      p.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
      assert.ok(!(await p.client.listTools()).tools.some((t) => t.name === "dyn_grown"));
      assert.equal(textOf(await p.call("dyn_grow")), "grew");
      await waitFor(() => changed > 0, { timeoutMs: 5000, what: "tools/list_changed upstream" });
      assert.ok((await p.client.listTools()).tools.some((t) => t.name === "dyn_grown"));
      assert.equal(textOf(await p.call("dyn_grown")), "grown");
    });
  });
}

describe("a 10 MB tool result (stdio, read with the proxy's own linear transport)", () => {
  // The SDK's own stdio client re-concatenates its read buffer per chunk (quadratic: ~20 s
  // for 10 MB on a busy machine), so this client reads with the proxy's linear transport.
  let client: Client;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "proxy-big-"));
    const file = join(dir, "m.yaml");
    writeFileSync(file, stringify({ servers: { big: bad("big"), small: gate({ GATE_NO_STOP: "1" }) } }));
    client = new Client({ name: "big-test", version: "0" });
    await client.connect(
      new FastStdioClientTransport({
        command: process.execPath,
        args: [CLI, "mcp-proxy", "--manifest", file],
        env: { PATH: process.env.PATH ?? "" },
      }),
    );
  });
  after(async () => {
    await client?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("passes through whole, and the proxy keeps serving", async () => {
    await client.listTools();
    const r = await client.request({ method: "tools/call", params: { name: "big_big", arguments: {} } }, CallToolResultSchema, {
      timeout: 50_000,
    });
    assert.ok(!r.isError);
    assert.equal(textOf(r).length, 10_000_000);
    const small = await client.request({ method: "tools/call", params: { name: "small_pid", arguments: {} } }, CallToolResultSchema);
    assert.match(textOf(small), /^\d+$/);
  });
});

describe("a 10 MB tool result (http)", () => {
  let p: RunningProxy;
  before(async () => {
    p = await startProxy({ servers: { big: bad("big"), small: gate({ GATE_NO_STOP: "1" }) } }, {}, { transport: "http" });
  });
  after(() => p?.close());

  test("passes through whole, and the proxy keeps serving", async () => {
    await p.client.listTools();
    const r = await p.client.request({ method: "tools/call", params: { name: "big_big", arguments: {} } }, CallToolResultSchema, {
      timeout: 50_000,
    });
    assert.ok(!r.isError);
    assert.equal(textOf(r).length, 10_000_000);
    assert.match(textOf(await p.call("small_pid")), /^\d+$/);
  });
});
