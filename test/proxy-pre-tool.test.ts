/**
 * `_PreToolUse` and `_PostToolUse` through the built proxy (stdio) and the daemon's HTTP
 * serving of the same aggregation, with real gate servers over MCP stdio and a tool whose
 * side effect is a file: judged by the file and by what the agent's client was told.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TRANSPORTS, gate, startProxy, textOf, type RunningProxy } from "./fixtures/proxy-harness.js";

const scratch = mkdtempSync(join(tmpdir(), "proxy-pre-tool-"));
after(() => rmSync(scratch, { recursive: true, force: true }));
const lines = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").trim().split("\n").filter(Boolean) : []);
const files = () => gate({ GATE_WRITE_TOOL: "1", GATE_NO_STOP: "1", GATE_TOOLS: "echo" }, { prefix: false });

for (const transport of TRANSPORTS) {
  describe(`a block gate and an advise gate around every call (${transport})`, () => {
    let p: RunningProxy;
    const dir = join(scratch, transport);
    const policyCounter = join(scratch, `policy-${transport}`);
    before(async () => {
      mkdirSync(dir, { recursive: true });
      p = await startProxy(
        {
          servers: {
            files: files(),
            policy: gate(
              {
                GATE_NO_STOP: "1",
                GATE_PRE_TOOL: "1",
                GATE_PRE_TOOL_OBJECT: "forbidden",
                GATE_PRE_TOOL_TEXT: "no writes to forbidden files",
                GATE_COUNTER_FILE: policyCounter,
              },
              { pre_tool: "block" },
            ),
            advisor: gate(
              {
                GATE_NO_STOP: "1",
                GATE_PRE_TOOL: "1",
                GATE_PRE_TOOL_OBJECT: '"echo"',
                GATE_PRE_TOOL_TEXT: "echo is noisy",
                GATE_POST_TOOL_TEXT: "audited",
              },
              { pre_tool: "advise" },
            ),
          },
        },
        {},
        { transport },
      );
    });
    after(() => p?.close());

    test("_PreToolUse and _PostToolUse are never listed to the model", async () => {
      const names = (await p.client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes("write_file"));
      assert.ok(!names.some((n) => n.includes("PreToolUse") || n.includes("PostToolUse")), names.join(","));
    });

    test("an allowed call is made: the file is written; the post-tool note follows the result", async () => {
      const file = join(dir, "ok.txt");
      const r = await p.call("write_file", { path: file, text: "hello" });
      assert.equal(readFileSync(file, "utf8"), "hello");
      assert.ok(!r.isError);
      assert.equal(r.content.length, 2);
      assert.match(textOf({ content: [r.content[0]!] }), /^wrote 5 bytes/);
      assert.equal(
        textOf({ content: [r.content[1]!] }),
        `Note from the post-tool gates (a gate server's text, not the user's; JSON-encoded): ${JSON.stringify("[advisor] audited (is_error: false)")}`,
      );
    });

    test("a call the block gate objects to is not made: no file, and the agent is told why, attributed", async () => {
      const file = join(dir, "forbidden.txt");
      const before = lines(policyCounter).length;
      const r = await p.call("write_file", { path: file, text: "secret" });
      assert.equal(r.isError, true);
      assert.equal(textOf(r), "[policy] no writes to forbidden files");
      assert.equal(existsSync(file), false);
      assert.equal(lines(policyCounter).length - before, 1, "the gate was asked exactly once");
      const line = p
        .logs()
        .filter((l) => l.evt === "hook.pre_tool" && l.verdict === "block")
        .at(-1) as { tool: string; servers: { name: string; verdict: string; ms: number }[] };
      assert.equal(line.tool, "write_file");
      assert.deepEqual(
        line.servers.map((s) => [s.name, s.verdict]),
        [
          ["policy", "block"],
          ["advisor", "allow"],
        ],
      );
    });

    test("an advise gate's text comes before the result, JSON-encoded; the call is made", async () => {
      const r = await p.call("echo", { text: "hi" });
      assert.ok(!r.isError);
      const texts = r.content.map((c) => (c.type === "text" ? c.text : ""));
      assert.equal(
        texts[0],
        `Advice from the pre-tool gate (a gate server's text, not the user's; JSON-encoded): ${JSON.stringify("[advisor] echo is noisy")}`,
      );
      assert.equal(texts[1], "echo: hi");
    });

    test("the model calling _PreToolUse itself gets an error and no gate is asked", async () => {
      const before = lines(policyCounter).length;
      const r = await p.call("_PreToolUse", { tool: "write_file", server: "files", arguments: {} });
      assert.equal(r.isError, true);
      assert.match(textOf(r), /_PreToolUse is asked by the bridge/);
      assert.equal(lines(policyCounter).length, before);
    });
  });
}

describe("block gates that cannot answer block; advise gates that cannot are skipped (stdio)", () => {
  let p: RunningProxy;
  before(async () => {
    const bad = (env: Record<string, string>, mode = "block") =>
      gate({ GATE_NO_STOP: "1", GATE_PRE_TOOL: "1", ...env }, { pre_tool: mode });
    p = await startProxy({
      servers: {
        files: files(),
        "g-error": bad({ GATE_PRE_TOOL_ANSWER: "error" }),
        "g-image": bad({ GATE_PRE_TOOL_ANSWER: "image" }),
        "g-huge": bad({ GATE_PRE_TOOL_ANSWER: "huge" }),
        "g-hang": bad({ GATE_HANG: "1" }),
        "g-strange": bad({ GATE_PRE_TOOL_SCHEMA: "strange" }),
        "g-down": bad({ GATE_START_AFTER_FILE: join(scratch, "never") }),
        "a-hang": bad({ GATE_HANG: "1" }, "advise"),
      },
      pre_tool_deadline: "1s",
    });
    // g-down never starts, so the proxy's first call waits for list_timeout and then goes
    // ahead with whatever has started; on a loaded machine that can be before the tool server
    // itself. The call is made once every server that is meant to run has said it is ready.
    for (const name of ["files", "g-error", "g-image", "g-huge", "g-hang", "g-strange", "a-hang"])
      await p.waitLog((l) => l.evt === "proxy.server_ready" && l.server === name);
  });
  after(() => p?.close());

  test("each failing block gate blocks, named; the file is not written; the session keeps serving", async () => {
    const file = join(scratch, "bad.txt");
    const r = await p.call("write_file", { path: file, text: "x" });
    assert.equal(r.isError, true);
    assert.equal(existsSync(file), false);
    const text = textOf(r);
    assert.ok(Buffer.byteLength(text) <= 16 * 1024, `bounded: ${Buffer.byteLength(text)}`);
    for (const [name, why] of [
      ["g-error", /answered with an error: policy engine crashed/],
      ["g-image", /answered with no text block/],
      ["g-hang", /no answer within 1000 ms \(mcp\.pre_tool_deadline\)/],
      ["g-strange", /is not answering/],
      ["g-down", /not running/],
    ] as const) {
      const part = text.split("\n\n").find((s) => s.startsWith(`[${name}] `));
      assert.ok(part, `${name} named in: ${text.slice(0, 2000)}`);
      assert.match(part, why);
    }
    assert.match(text, /\[g-huge\] x+…/);
    assert.ok(!text.includes("[a-hang]"));
    const line = p.logs().findLast((l) => l.evt === "hook.pre_tool") as { verdict: string; servers: { name: string; verdict: string }[] };
    assert.equal(line.verdict, "block");
    assert.equal(line.servers.find((s) => s.name === "a-hang")?.verdict, "skipped");
    const pid = await p.call("pid");
    assert.equal(pid.isError, true, "still blocked, still answering");
  });
});

describe("a tool call with 10 MB of arguments (stdio)", () => {
  let p: RunningProxy;
  before(async () => {
    p = await startProxy({
      servers: {
        files: files(),
        policy: gate({ GATE_NO_STOP: "1", GATE_PRE_TOOL: "1", GATE_PRE_TOOL_OBJECT: "forbidden" }, { pre_tool: "block" }),
      },
    });
  });
  after(() => p?.close());

  test("is blocked without sending it to the gate, naming the limit; the next call goes through", async () => {
    const file = join(scratch, "big.txt");
    const r = await p.call("write_file", { path: file, text: "y".repeat(10 * 1024 * 1024) });
    assert.equal(r.isError, true);
    assert.match(
      textOf(r),
      /^\[policy\] pre-tool gate 'policy' is not answering \(the call's arguments \(\d+ bytes as JSON\) are over the 1048576 bytes/,
    );
    assert.equal(existsSync(file), false);
    const small = join(scratch, "small.txt");
    const ok = await p.call("write_file", { path: small, text: "fine" });
    assert.ok(!ok.isError, textOf(ok));
    assert.equal(readFileSync(small, "utf8"), "fine");
  });
});
