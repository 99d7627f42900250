import { test } from "node:test";
import assert from "node:assert/strict";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { CallToolResultSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { routeRequestsDirectly } from "../../src/proxy/fast-path.js";

test("requests bypass the SDK's failing zod guards and still reach every handler", async () => {
  const server = new Server({ name: "s", version: "0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: "t", inputSchema: { type: "object" } }] }));
  server.fallbackRequestHandler = async (req) => ({ content: [{ type: "text", text: `fallback ${req.method}` }] });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  assert.equal(routeRequestsDirectly(server as never, st), true, "the SDK still has the internal dispatcher this relies on");
  const client = new Client({ name: "c", version: "0" });
  await client.connect(ct);
  assert.deepEqual(
    (await client.listTools()).tools.map((t) => t.name),
    ["t"],
  );
  await client.ping();
  const r = await client.request({ method: "tools/call", params: { name: "t", arguments: {} } }, CallToolResultSchema);
  assert.deepEqual(r.content, [{ type: "text", text: "fallback tools/call" }]);
  await client.close();
});
