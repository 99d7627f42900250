/**
 * The daemon's per-session MCP endpoint against bad input, over real TCP on 127.0.0.1:
 * two sessions' endpoints side by side, each with its own aggregator and a real MCP server
 * (test/fixtures/gate-server.mjs). A token replayed from the other session, a request with
 * none, a foreign Host, another path, an oversized body, more requests at once than the
 * endpoint serves, and a flood: each is refused with its status, logged, and bounded, while
 * the session itself and the other session keep being served.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { Aggregator } from "../src/proxy/aggregator.js";
import { HttpEndpoint, type EndpointLimits } from "../src/proxy/http-endpoint.js";
import { GATE, textOf } from "./fixtures/proxy-harness.js";
import { captureLogger } from "../kit/queue-helpers.js";
import { waitFor } from "../kit/wait.js";

interface Session {
  endpoint: HttpEndpoint;
  aggregator: Aggregator;
  headers: Record<string, string>;
  client: Client;
}

const cap = captureLogger("debug");
const sessions: Session[] = [];

async function session(key: string, limits?: Partial<EndpointLimits>, env: Record<string, string> = {}): Promise<Session> {
  const aggregator = new Aggregator({
    manifest: {
      servers: [
        {
          name: "dev",
          command: process.execPath,
          args: [GATE],
          env: { GATE_TOOLS: "shell", GATE_NO_STOP: "1", ...env },
          prefix: false,
          stop: "reprompt",
          on_error: "allow",
        },
      ],
      hook_deadline: 2000,
      list_timeout: 15_000,
    },
    logger: cap.logger,
  });
  const endpoint = await HttpEndpoint.open({ logger: cap.logger, limits });
  const headers = endpoint.bind({ key, aggregator });
  const client = new Client({ name: key, version: "0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(endpoint.url), { requestInit: { headers } }));
  const s = { endpoint, aggregator, headers, client };
  sessions.push(s);
  return s;
}

const shell = (s: Session, text: string) =>
  s.client.request({ method: "tools/call", params: { name: "shell", arguments: { text } } }, CallToolResultSchema, { timeout: 20_000 });

/** The session's own MCP session id, as its client got it at initialize. */
const mcpSession = (s: Session) => ({ "mcp-session-id": (s.client.transport as StreamableHTTPClientTransport).sessionId! });

/** One raw POST (a tools/list unless told otherwise), as an agent's HTTP client would send it; the answer is read whole. */
let ids = 0;
async function post(
  url: string,
  headers: Record<string, string>,
  body: unknown = { jsonrpc: "2.0", id: `raw-${++ids}`, method: "tools/list" },
) {
  const r = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": LATEST_PROTOCOL_VERSION,
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  await r.arrayBuffer();
  return r;
}

/** The status of a POST to the session's endpoint with this Host header (fetch does not let a caller set Host). */
function withHost(s: Session, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(s.endpoint.url, { method: "POST", headers: { ...s.headers, host, "content-type": "application/json" } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end("{}");
  });
}

const refusals = (reason: string) => cap.lines.filter((l) => l.evt === "mcp.http_refused" && l.reason === reason);

let a: Session;
let b: Session;
before(async () => {
  a = await session("scope-a");
  b = await session("scope-b");
});
after(async () => {
  for (const s of sessions) {
    await s.client.close().catch(() => {});
    await s.endpoint.close();
    await s.aggregator.stop();
  }
});

test("a token replayed from another session, no token, a foreign Host and another path are refused and logged; both sessions keep working", async () => {
  const replay = await post(b.endpoint.url, a.headers);
  assert.equal(replay.status, 401, "session A's token on session B's endpoint");
  assert.match(replay.headers.get("www-authenticate") ?? "", /^Bearer/);
  assert.equal((await post(b.endpoint.url, {})).status, 401, "no token");
  assert.equal((await post(b.endpoint.url, { authorization: "Bearer not-a-token" })).status, 401, "a made-up token");
  const elsewhere = new URL(b.endpoint.url);
  elsewhere.pathname = "/metrics";
  assert.equal((await post(elsewhere.href, b.headers)).status, 404, "only /mcp is served");
  assert.equal(await withHost(b, "evil.example"), 403, "a Host that is not the endpoint's loopback address (DNS rebinding)");

  const tokens = refusals("token").filter((l) => l.session === "scope-b");
  assert.equal(tokens.length, 3, "each bad token logged, naming the endpoint's session");
  assert.ok(
    tokens.every((l) => l.level === "warn" && l.status === 401),
    "at warn, with the status",
  );
  assert.equal(refusals("path").length, 1);
  assert.equal(refusals("host").length, 1);
  assert.ok(!JSON.stringify(cap.lines).includes(a.headers.Authorization!.slice(7)), "the token itself is never logged");

  assert.equal(textOf(await shell(a, "still A")), "shell: still A");
  assert.equal(textOf(await shell(b, "still B")), "shell: still B");
});

test("on a connection that has shown the token, another token or a foreign Host is still refused, and the token is served again", async () => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const sockets = new Set<unknown>();
  const send = (headers: Record<string, string>) =>
    new Promise<number>((resolve, reject) => {
      const req = request(
        b.endpoint.url,
        {
          agent,
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...mcpSession(b), ...headers },
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
        },
      );
      req.on("socket", (socket) => sockets.add(socket));
      req.on("error", reject);
      req.end(JSON.stringify({ jsonrpc: "2.0", id: `same-${++ids}`, method: "tools/list" }));
    });
  try {
    assert.equal(await send(b.headers), 200, "the session's token");
    assert.equal(await send(a.headers), 401, "another session's token on the same connection");
    assert.equal(await send({ authorization: `${b.headers.Authorization} ` }), 200, "the same token, written differently");
    assert.equal(await send({ authorization: "Bearer not-a-token" }), 401, "a made-up token on the same connection");
    assert.equal(await send({ ...b.headers, host: "evil.example" }), 403, "a foreign Host on the same connection");
    assert.equal(await send(b.headers), 200, "the session's token again");
    assert.equal(sockets.size, 1, "all on one connection");
  } finally {
    agent.destroy();
  }
});

test("a tool call is answered as one JSON body; a call that reports progress is answered on an SSE stream, progress first", async () => {
  const headers = { ...a.headers, ...mcpSession(a) };
  const plain = await fetch(a.endpoint.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: "plain-1", method: "tools/call", params: { name: "shell", arguments: { text: "json" } } }),
  });
  assert.equal(plain.status, 200);
  assert.equal(plain.headers.get("content-type"), "application/json");
  assert.deepEqual(await plain.json(), { jsonrpc: "2.0", id: "plain-1", result: { content: [{ type: "text", text: "shell: json" }] } });

  const progressed = await fetch(a.endpoint.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: "progress-1",
      method: "tools/call",
      params: { name: "sleep", arguments: { ms: 40 }, _meta: { progressToken: "p-1" } },
    }),
  });
  assert.equal(progressed.headers.get("content-type"), "text/event-stream");
  const events = (await progressed.text())
    .split("\n\n")
    .filter((e) => e.trim() !== "")
    .map((e) => JSON.parse(e.replace(/^event: message\ndata: /, "")) as { method?: string; id?: string; params?: { progress?: number } });
  assert.deepEqual(
    events.map((e) => e.method ?? `answer ${e.id}`),
    ["notifications/progress", "notifications/progress", "notifications/progress", "notifications/progress", "answer progress-1"],
  );
  assert.deepEqual(
    events.slice(0, 4).map((e) => e.params?.progress),
    [1, 2, 3, 4],
  );
});

test("after its session ends, the endpoint refuses the session's token; a new session there gets a new one", async () => {
  const c = await session("scope-c");
  assert.equal(textOf(await shell(c, "before")), "shell: before");
  const old = c.headers;
  c.endpoint.unbind();
  assert.equal((await post(c.endpoint.url, old)).status, 401, "the ended session's token is revoked");
  const headers = c.endpoint.bind({ key: "scope-c2", aggregator: c.aggregator });
  assert.notEqual(headers.Authorization, old.Authorization);
  const client = new Client({ name: "c2", version: "0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(c.endpoint.url), { requestInit: { headers } }));
  const r = await client.request({ method: "tools/call", params: { name: "shell", arguments: { text: "after" } } }, CallToolResultSchema);
  assert.equal(textOf(r), "shell: after");
  await client.close();
});

test("an oversized body is refused with 413 before it is parsed; the session keeps working", async () => {
  const small = await session("scope-small", { maxBodyBytes: 64 * 1024 });
  const big = { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "shell", arguments: { text: "x".repeat(200 * 1024) } } };
  const r = await post(small.endpoint.url, small.headers, big);
  assert.equal(r.status, 413);
  assert.equal(refusals("too large").length, 1);
  assert.equal(textOf(await shell(small, "fits")), "shell: fits");
});

test("more requests at once than the endpoint serves: the rest are refused with 503, a notification still gets through, and all are served again once they finish", async () => {
  const dir = mkdtempSync(join(tmpdir(), "mcp-http-busy-"));
  try {
    const counter = join(dir, "calls.txt");
    const busy = await session("scope-busy", { maxInFlight: 3 }, { GATE_COUNTER_FILE: counter });
    const sleeps = [1, 2, 3].map(() =>
      busy.client.request({ method: "tools/call", params: { name: "sleep", arguments: { ms: 3000 } } }, CallToolResultSchema, {
        timeout: 20_000,
      }),
    );
    await waitFor(
      () =>
        existsSync(counter) &&
        readFileSync(counter, "utf8")
          .split("\n")
          .filter((l) => l.startsWith("sleep ")).length === 3,
      {
        what: "the three sleeps to reach the server",
      },
    );
    const headers = { ...busy.headers, ...mcpSession(busy) };
    const refused = await post(busy.endpoint.url, headers);
    assert.equal(refused.status, 503, "a fourth request while three are in flight");
    assert.equal(refused.headers.get("retry-after"), "1");
    const notice = await post(busy.endpoint.url, headers, {
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: "none" },
    });
    assert.equal(notice.status, 202, "a notification (a cancellation) is taken while the requests are at their limit");
    await Promise.all(sleeps);
    assert.equal(textOf(await shell(busy, "after the sleeps")), "shell: after the sleeps");
    assert.ok(refusals("busy").length >= 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("cancelled calls free their place: more cancellations than the endpoint serves at once, and the session is still served", async () => {
  const dir = mkdtempSync(join(tmpdir(), "mcp-http-cancel-"));
  try {
    const counter = join(dir, "calls.txt");
    const s = await session("scope-cancel", { maxInFlight: 2 }, { GATE_COUNTER_FILE: counter });
    const calls = (what: string) =>
      existsSync(counter)
        ? readFileSync(counter, "utf8")
            .split("\n")
            .filter((l) => l.startsWith(`${what} `))
        : [];
    // An agent's client cancels with a notification and keeps its request's stream open (the
    // SDK's does): each cancelled call must end its stream on the endpoint's side, or three
    // of them would hold its two places for good.
    for (let i = 1; i <= 3; i++) {
      const ac = new AbortController();
      const pending = s.client.request(
        { method: "tools/call", params: { name: "sleep", arguments: { ms: 120_000 } } },
        CallToolResultSchema,
        {
          signal: ac.signal,
        },
      );
      await waitFor(() => calls("sleep").length === i, { what: `sleep ${i} to reach the server` });
      ac.abort("the agent cancels");
      await assert.rejects(pending);
      await waitFor(() => calls("cancelled").length === i, { what: `sleep ${i}'s cancellation to reach the server` });
    }
    assert.equal(textOf(await shell(s, "after three cancellations")), "shell: after three cancellations");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a flood from one agent is refused with 429 and its log lines are bounded; the other session is served throughout", async () => {
  const flood = await session("scope-flood", { rate: { frames: 5, windowMs: 1000 } });
  const before = refusals("rate").length;
  let stop = false;
  const statuses: number[] = [];
  const headers = { ...flood.headers, ...mcpSession(flood) };
  const flooder = async () => {
    while (!stop) statuses.push((await post(flood.endpoint.url, headers)).status);
  };
  const flooders = Array.from({ length: 8 }, flooder);
  await waitFor(() => statuses.filter((s) => s === 429).length >= 10, { what: "the flood to be refused", timeoutMs: 30_000 });
  // While the flood runs, the other session's calls are answered, each with its own text.
  for (let i = 0; i < 5; i++) assert.equal(textOf(await shell(b, `during ${i}`)), `shell: during ${i}`);
  await waitFor(() => statuses.filter((s) => s === 429).length >= 30, { what: "30 refusals", timeoutMs: 30_000 });
  stop = true;
  await Promise.all(flooders);
  const tooMany = statuses.filter((s) => s === 429).length;
  assert.ok(tooMany >= 30);
  assert.ok(
    statuses.every((s) => s === 200 || s === 429),
    `only answers and refusals: ${[...new Set(statuses)].join(",")}`,
  );
  const logged = refusals("rate").length - before;
  assert.ok(logged >= 1 && logged <= 5, `the refusals are logged, at most 5 lines a minute (${logged} for ${tooMany})`);
  // The flooding session itself is served again once its window has room.
  await waitFor(async () => (await post(flood.endpoint.url, headers)).status === 200, {
    what: "the flooding session to be served again",
    intervalMs: 100,
  });
});
