/**
 * The pass-through's message mapping, line by line. The same paths run against real
 * servers in proxy-aggregate.test.ts; here each rule is pinned where a real server
 * cannot be made to break it on demand (a non-object result, a late answer).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { CallToolResult, JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { AgentPassThrough, RawCalls, type GatedSend } from "../../src/proxy/pass-through.js";
import { mcpErrorText } from "../../src/proxy/call-errors.js";
import { sleep } from "../../kit/wait.js";

function sink() {
  const lines: Record<string, any>[] = [];
  return {
    lines,
    sendLine: (l: string) => (lines.push(JSON.parse(l)), true),
    sendMessage: (m: Record<string, unknown>) => void lines.push(JSON.parse(JSON.stringify(m))),
  };
}
const text = (r: CallToolResult) => (r.content[0] as { text: string }).text;

test("the agent's id, tool name and progress token are swapped for ours and back", () => {
  const down = sink();
  const up = sink();
  const raw = new RawCalls(down, "dev");
  const agent = new AgentPassThrough(up, (name) => (name === "dev_run" ? { raw, tool: "run" } : undefined));
  assert.equal(
    agent.take({
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { name: "dev_run", task: { ttl: 1 }, _meta: { progressToken: "p", trace: 1 } },
    } as JSONRPCMessage),
    true,
  );
  assert.equal(
    agent.take({ jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: "other" } } as JSONRPCMessage),
    false,
    "not ours: the SDK's path",
  );
  const sent = down.lines[0]!;
  assert.equal(sent.params.name, "run");
  assert.deepEqual(sent.params.arguments, {});
  assert.equal(sent.params.task, undefined, "a task request is not relayed: the proxy does not offer tasks");
  assert.equal(sent.params._meta.progressToken, sent.id, "our token is our id");
  assert.equal(sent.params._meta.trace, 1, "other _meta passes through");
  assert.equal(
    raw.take({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: sent.id, progress: 1 } } as JSONRPCMessage),
    true,
  );
  assert.deepEqual(up.lines[0], { jsonrpc: "2.0", method: "notifications/progress", params: { progress: 1, progressToken: "p" } });
  assert.equal(raw.take({ jsonrpc: "2.0", id: sent.id, result: { content: [] } } as JSONRPCMessage), true);
  assert.deepEqual(up.lines[1], { jsonrpc: "2.0", id: 7, result: { content: [] } });
  assert.equal(raw.take({ jsonrpc: "2.0", id: 0, result: {} } as JSONRPCMessage), false, "the SDK client's own responses are left to it");
});

test("a cancelled call tells the server and drops its late answer", () => {
  const down = sink();
  const up = sink();
  const raw = new RawCalls(down, "dev");
  const agent = new AgentPassThrough(up, () => ({ raw, tool: "run" }));
  agent.take({ jsonrpc: "2.0", id: "a", method: "tools/call", params: { name: "x" } } as JSONRPCMessage);
  const id = down.lines[0]!.id;
  assert.equal(
    agent.take({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "a", reason: "user" } } as JSONRPCMessage),
    true,
  );
  assert.deepEqual(down.lines[1], { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason: "user" } });
  assert.equal(raw.take({ jsonrpc: "2.0", id, result: { content: [] } } as JSONRPCMessage), true, "consumed");
  assert.equal(up.lines.length, 0, "nothing reaches the agent after its cancel");
  assert.equal(raw.size, 0);
});

test("a gated call is sent only once its gate allows, and a cancel while it is asked or running ends it unanswered", async () => {
  const down = sink();
  const up = sink();
  const raw = new RawCalls(down, "dev");
  const asked: { args: unknown; allow: () => void; outcome?: Promise<unknown> }[] = [];
  const gate: GatedSend = (args, send) =>
    new Promise<void>((allow) => asked.push({ args, allow })).then(() => {
      const sent = send();
      assert.ok(sent, "the connection is open");
      asked.at(-1)!.outcome = sent.then(
        () => "answered",
        () => "abandoned",
      );
      return sent;
    });
  const agent = new AgentPassThrough(up, () => ({ raw, tool: "run", gate }));
  const call = (id: string) =>
    agent.take({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "x", arguments: { n: id } } } as JSONRPCMessage);
  const cancel = (id: string) =>
    agent.take({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason: "user" } } as JSONRPCMessage);

  assert.equal(call("a"), true);
  assert.deepEqual(asked[0]!.args, { n: "a" }, "the gate is asked with the call's arguments");
  assert.equal(down.lines.length, 0, "nothing is sent while the gate is asked");
  asked[0]!.allow();
  await sleep(0);
  assert.equal(down.lines[0]!.params.name, "run");
  raw.take({ jsonrpc: "2.0", id: down.lines[0]!.id, result: { content: [] } } as JSONRPCMessage);
  await sleep(0);
  assert.deepEqual(up.lines[0], { jsonrpc: "2.0", id: "a", result: { content: [] } });

  call("b");
  assert.equal(cancel("b"), true, "a call held for its gate is the pass-through's to cancel");
  asked[1]!.allow();
  await sleep(0);
  assert.equal(down.lines.length, 1, "cancelled while asked: never sent");

  call("c");
  asked[2]!.allow();
  await sleep(0);
  const sent = down.lines[1]!;
  cancel("c");
  assert.deepEqual(down.lines[2], { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: sent.id, reason: "user" } });
  assert.equal(await asked[2]!.outcome, "abandoned", "the gate's wait for the answer ends");
  raw.take({ jsonrpc: "2.0", id: sent.id, result: { content: [] } } as JSONRPCMessage);
  await sleep(0);
  assert.equal(up.lines.length, 1, "no answer for b or c reaches the agent");
  assert.equal(raw.size, 0);
});

test("a result that is not an object, and a connection that closes, are isError results", () => {
  const down = sink();
  const raw = new RawCalls(down, "dev");
  const results: CallToolResult[] = [];
  const a = raw.call("run", {}, { done: (r) => results.push(r) })!;
  raw.call("sleep", {}, { done: (r) => results.push(r) });
  raw.take({ jsonrpc: "2.0", id: a, result: [1, 2] } as unknown as JSONRPCMessage);
  raw.closed();
  assert.equal(results.length, 2);
  assert.ok(results.every((r) => r.isError));
  assert.match(text(results[0]!), /'dev' answered 'run' with something that is not a tool result/);
  assert.match(text(results[1]!), /'dev' exited during 'sleep'/);
  assert.equal(raw.call("run", {}, { done: () => {} }), undefined, "a closed connection takes no calls");
});

test("the server's timeout is reset by progress and then cancels the call", async () => {
  const down = sink();
  const raw = new RawCalls(down, "dev", 80);
  let result: CallToolResult | undefined;
  const id = raw.call("run", { _meta: { progressToken: 1 } }, { done: (r) => (result = r), progress: () => {} })!;
  for (let i = 0; i < 3; i++) {
    await sleep(50); // progress arrives while the 80 ms timeout runs
    raw.take({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: id, progress: i } } as JSONRPCMessage);
  }
  assert.equal(result, undefined, "150 ms in, still running: progress kept it alive");
  await sleep(150); // past the 80 ms timeout since the last progress
  assert.match(text(result!), /'run' on MCP server 'dev' timed out after 80 ms/);
  assert.equal(down.lines.at(-1)!.method, "notifications/cancelled");
});

test("a JSON-RPC error reads 'MCP error <code>: <message>' once, whichever side added the prefix", () => {
  const once = "MCP error -32001: not today";
  assert.equal(mcpErrorText({ code: -32001, message: "not today" }), once);
  assert.equal(mcpErrorText({ code: -32001, message: once }), once, "as an SDK server sends it");
  assert.equal(mcpErrorText({ code: -32001, message: `MCP error -32001: ${once}` }), once, "as the SDK's McpError reads on our side");
});
