/**
 * The proxy against real downstream servers: server-everything, server-filesystem and
 * gate fixtures, spawned by the built proxy, driven by an SDK Client over stdio; and the same
 * suite against the daemon's HTTP serving of the same aggregation (the harness's `http`).
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { EVERYTHING, FILESYSTEM, REFUSING, TRANSPORTS, gate, startProxy, textOf, type RunningProxy } from "./fixtures/proxy-harness.js";
import { waitFor } from "../kit/wait.js";
import { AGENT_PREFIX, MAX_QUALIFIED_NAME } from "../src/proxy/naming.js";

const LONG = "check_" + "x".repeat(60);

for (const transport of TRANSPORTS) {
  describe(`union of real servers (${transport})`, () => {
    let p: RunningProxy;
    let files: string;
    let counter: string;
    before(async () => {
      files = mkdtempSync(join(tmpdir(), "proxy-fs-"));
      writeFileSync(join(files, "hello.txt"), "hello from disk");
      counter = join(files, "..", `counter-${process.pid}-${Date.now()}`);
      p = await startProxy(
        {
          servers: {
            dev: gate({ GATE_TOOLS: "shell", GATE_NO_STOP: "1", GATE_COUNTER_FILE: counter }, { prefix: false }),
            everything: { command: EVERYTHING, args: ["stdio"] },
            fs: { command: FILESYSTEM, args: [files] },
            odd: gate({ GATE_TOOLS: `${LONG},dotted.name`, GATE_NO_STOP: "1" }),
            broken: { command: "/nonexistent/mcp-server" },
            strict: { command: process.execPath, args: [REFUSING] },
          },
        },
        {},
        { transport },
      );
    });
    after(async () => {
      await p?.close();
      rmSync(files, { recursive: true, force: true });
      rmSync(counter, { force: true });
    });

    test("lists every working server's tools under the naming rules", async () => {
      const { tools } = await p.client.listTools();
      const names = tools.map((t) => t.name);
      assert.ok(names.includes("shell"), "the dev shell stays unprefixed");
      assert.ok(names.includes("everything_echo"));
      assert.ok(names.includes("fs_read_text_file"));
      assert.ok(names.includes("odd_dotted-name"));
      assert.ok(!names.some((n) => n.startsWith("broken")));
      assert.equal(new Set(names).size, names.length, "no duplicates");
      for (const n of names) {
        assert.match(n, /^[A-Za-z0-9_-]+$/);
        assert.ok(!n.includes("__"), `${n} has no double underscore`);
        assert.ok((AGENT_PREFIX + n).length <= MAX_QUALIFIED_NAME, `${n} fits 64 with the agent prefix`);
      }
      const long = names.find((n) => n.startsWith("odd_check_x"));
      assert.ok(long, "the long tool is listed, shortened");
      const echo = tools.find((t) => t.name === "everything_echo")!;
      assert.match(echo.description ?? "", /echo/i, "descriptions pass through");
      assert.ok(echo.inputSchema.properties?.message, "schemas pass through");
      await p.waitLog((l) => l.evt === "proxy.server_failed" && l.server === "broken");
      await p.waitLog((l) => l.evt === "proxy.tool_renamed" && l.tool === LONG);
    });

    test("forwards calls, including a shortened name and the unprefixed shell", async () => {
      assert.equal(textOf(await p.call("everything_echo", { message: "hi" })), "Echo: hi");
      assert.equal(textOf(await p.call("shell", { text: "ls" })), "shell: ls");
      const { tools } = await p.client.listTools();
      const long = tools.find((t) => t.name.startsWith("odd_check_x"))!.name;
      assert.equal(textOf(await p.call(long, { text: "y" })), `${LONG}: y`);
      const read = await p.call("fs_read_text_file", { path: join(files, "hello.txt") });
      assert.match(textOf(read), /hello from disk/);
    });

    test("an unknown tool and a downstream tool error are isError results", async () => {
      const unknown = await p.call("no_such_tool");
      assert.equal(unknown.isError, true);
      assert.match(textOf(unknown), /unknown tool 'no_such_tool'/);
      const bad = await p.call("fs_read_text_file", { path: "/etc/passwd" });
      assert.equal(bad.isError, true);
    });

    test("a downstream protocol error is an isError result naming the server and the tool", async () => {
      const r = await p.call("strict_refuse");
      assert.equal(r.isError, true);
      assert.match(textOf(r), /MCP server 'strict' refused 'refuse': MCP error -32001: not today/);
      assert.equal(textOf(await p.call("strict_echo", { text: "still serving" })), "still serving");
    });

    test("concurrent calls to several servers each get their own answer", async () => {
      const calls = Array.from({ length: 60 }, (_, i) => {
        if (i % 3 === 0) return p.call("everything_echo", { message: `m${i}` }).then((r) => [textOf(r), `Echo: m${i}`]);
        if (i % 3 === 1) return p.call("shell", { text: `s${i}` }).then((r) => [textOf(r), `shell: s${i}`]);
        return p.call("strict_echo", { text: `e${i}` }).then((r) => [textOf(r), `e${i}`]);
      });
      for (const [got, want] of await Promise.all(calls)) assert.equal(got, want);
    });

    test("resources, templates and prompts pass through, namespaced", async () => {
      const { resources } = await p.client.listResources();
      assert.ok(resources.length > 0);
      const first = resources[0]!;
      assert.ok(first.name.startsWith("everything_"));
      const read = await p.client.readResource({ uri: first.uri });
      assert.ok(read.contents.length > 0);
      const { resourceTemplates } = await p.client.listResourceTemplates();
      assert.ok(resourceTemplates.length > 0);
      const { prompts } = await p.client.listPrompts();
      const simple = prompts.find((x) => x.name.startsWith("everything_") && !(x.arguments ?? []).some((a) => a.required));
      assert.ok(simple, "a prompt without required arguments");
      const got = await p.client.getPrompt({ name: simple.name });
      assert.ok(got.messages.length > 0);
    });

    test("progress notifications pass through with the caller's token", async () => {
      const seen: number[] = [];
      const r = await p.client.request(
        { method: "tools/call", params: { name: "everything_trigger-long-running-operation", arguments: { duration: 1, steps: 3 } } },
        CallToolResultSchema,
        { onprogress: (pr) => seen.push(pr.progress), timeout: 20_000 },
      );
      assert.ok(!r.isError);
      assert.ok(seen.length >= 2, `progress seen: ${seen.join(",")}`);
    });

    test("cancellation reaches the downstream server", async () => {
      const ac = new AbortController();
      const pending = p.client.request({ method: "tools/call", params: { name: "sleep", arguments: { ms: 8000 } } }, CallToolResultSchema, {
        signal: ac.signal,
      });
      await waitFor(() => existsSync(counter) && readFileSync(counter, "utf8").includes("sleep"), {
        timeoutMs: 10_000,
        what: "sleep to start",
      });
      ac.abort("test cancels");
      await assert.rejects(pending);
      await waitFor(() => readFileSync(counter, "utf8").includes("cancelled"), {
        timeoutMs: 5_000,
        what: "the downstream to see the cancellation",
      });
    });
  });

  describe(`name collisions (${transport})`, () => {
    let p: RunningProxy;
    before(async () => {
      p = await startProxy(
        {
          servers: {
            dev: gate({ GATE_TOOLS: "shell", GATE_NO_STOP: "1" }, { prefix: false }),
            other: gate({ GATE_TOOLS: "shell", GATE_NO_STOP: "1" }, { prefix: false }),
          },
        },
        {},
        { transport },
      );
    });
    after(() => p?.close());

    test("two servers offering the same name is an error naming both", async () => {
      await assert.rejects(p.client.listTools(), (err: Error) => /offered by both 'dev' and 'other'/.test(err.message));
      await p.waitLog((l) => l.evt === "proxy.name_collision");
    });
  });

  describe(`crash and restart (${transport})`, () => {
    let p: RunningProxy;
    before(async () => {
      p = await startProxy(
        {
          servers: {
            crashy: gate({ GATE_CRASH_AFTER: "2", GATE_NO_STOP: "1" }),
            steady: gate({ GATE_TOOLS: "echo", GATE_NO_STOP: "1" }),
            strict: gate({ GATE_NO_STOP: "1" }, { timeout: "300ms" }),
          },
        },
        {},
        { transport },
      );
    });
    after(() => p?.close());

    test("a crashed server is restarted while the others keep serving", async () => {
      await p.client.listTools();
      const pid1 = textOf(await p.call("crashy_pid"));
      const crashed = await p.call("crashy_pid");
      assert.equal(crashed.isError, true, "the call that crashed it is an isError result");
      assert.match(textOf(crashed), /crashy/);
      const duringDown = await p.call("crashy_pid");
      if (duringDown.isError) assert.match(textOf(duringDown), /crashy.*(down|starting)/);
      assert.equal(textOf(await p.call("steady_echo", { text: "still here" })), "echo: still here");
      const pid2 = await waitFor(
        async () => {
          const r = await p.call("crashy_pid");
          return !r.isError && textOf(r);
        },
        { timeoutMs: 15_000, what: "crashy to come back" },
      );
      assert.notEqual(pid2, pid1);
      await p.waitLog((l) => l.evt === "proxy.server_down" && l.server === "crashy");
    });

    test("a server's timeout turns a long call into an isError result", async () => {
      const r = await p.call("strict_sleep", { ms: 3000 });
      assert.equal(r.isError, true);
      assert.match(textOf(r), /timed out after 300 ms/);
      assert.match(textOf(await p.call("strict_pid")), /^\d+$/, "the server keeps serving");
    });
  });
}
