/**
 * src/base/http-body.ts, the one bounded body reader, over a real HTTP server on 127.0.0.1:
 * a body within the limit arrives whole; one whose Content-Length announces more is refused
 * before it is read, one that grows past the limit as it arrives at that chunk; drained, the
 * server still answers 413 on the connection, destroyed (the default) the connection is
 * dropped; a client that goes away mid-body rejects with the stream's own error. The daemon's
 * requests (src/base/http-request.ts) read their answers the same way: whole up to the limit,
 * refused by its Content-Length or at the chunk that passes it when it would never end, and
 * bounded in time as a whole, a server that stops mid-answer included.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, request, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { BodyTooLargeError, readBody, type ReadBodyOptions } from "../../src/base/http-body.js";
import { httpRequest } from "../../src/base/http-request.js";
import { waitFor } from "../../kit/wait.js";

const LIMIT = 1024;
/** What the server's reader ended with, per request, in order. */
const outcomes: Array<{ bytes: number } | { error: Error }> = [];
let rest: ReadBodyOptions["rest"];

const server = createServer((req, res) => {
  readBody(req, LIMIT, { rest }).then(
    (b) => {
      outcomes.push({ bytes: b.length });
      res.end(`read ${b.length}`);
    },
    (error: Error) => {
      outcomes.push({ error });
      res.writeHead(413, { connection: "close" });
      res.end(error.message);
    },
  );
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const port = (server.address() as AddressInfo).port;
after(() => {
  server.closeAllConnections();
  server.close();
});

/** POSTs `chunks` one write each (chunked, unless `length` is given); the answer, or the client's error. */
function post(chunks: Buffer[], length?: number): Promise<{ status: number; text: string } | { clientError: string }> {
  return new Promise((resolve) => {
    const headers = length === undefined ? {} : { "content-length": String(length) };
    const req = request({ host: "127.0.0.1", port, method: "POST", path: "/", headers }, (res: IncomingMessage) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", (err) => resolve({ clientError: err.message }));
    for (const c of chunks) req.write(c);
    req.end();
  });
}

const bytes = (n: number) => Buffer.alloc(n, 0x61);

test("a body up to the limit is read whole, across its chunks", async () => {
  rest = "drain";
  outcomes.length = 0;
  assert.deepEqual(await post([bytes(500), bytes(500), bytes(24)]), { status: 200, text: "read 1024" });
  assert.deepEqual(await post([]), { status: 200, text: "read 0" });
  assert.deepEqual(outcomes, [{ bytes: 1024 }, { bytes: 0 }]);
});

test("a Content-Length above the limit is refused before the body is read; drained, the server still answers 413", async () => {
  rest = "drain";
  outcomes.length = 0;
  const r = await post([bytes(2000)], 2000);
  assert.deepEqual(r, { status: 413, text: "the body is announced as 2000 bytes, more than the 1024 allowed" });
  const [o] = outcomes;
  assert.ok(o && "error" in o && o.error instanceof BodyTooLargeError);
  assert.deepEqual([o.error.limit, o.error.announced], [1024, 2000]);
});

test("a chunked body that grows past the limit is refused at the chunk that passes it; drained, the server answers 413", async () => {
  rest = "drain";
  outcomes.length = 0;
  const r = await post([bytes(600), bytes(600), bytes(600)]);
  assert.deepEqual(r, { status: 413, text: "the body is larger than the 1024 bytes allowed" });
  const [o] = outcomes;
  assert.ok(o && "error" in o && o.error instanceof BodyTooLargeError);
  assert.deepEqual([o.error.limit, o.error.announced], [1024, undefined]);
});

test("by default a body too large is destroyed: the connection drops, and no answer reaches the client", async () => {
  rest = undefined;
  outcomes.length = 0;
  const r = await post([bytes(2000)], 2000);
  assert.ok("clientError" in r, `the client got an answer: ${JSON.stringify(r)}`);
  assert.equal(outcomes.length, 1);
  assert.ok("error" in outcomes[0]! && outcomes[0].error instanceof BodyTooLargeError);
});

test("a client that goes away mid-body: the reader rejects with the stream's error, not as too large", async () => {
  rest = "drain";
  outcomes.length = 0;
  const arrived = new Promise((resolve) => server.once("request", resolve));
  const req = request({ host: "127.0.0.1", port, method: "POST", path: "/" });
  req.on("error", () => undefined);
  req.write(bytes(100));
  await arrived;
  req.destroy();
  const o = await waitFor(() => outcomes[0], { what: "the reader's end" });
  assert.ok("error" in o, "rejected");
  assert.ok(!(o.error instanceof BodyTooLargeError), o.error.message);
});

test("a request's answer: read whole up to the limit with its status; refused by its Content-Length, at the chunk that passes the limit of one that never ends, or at the deadline of one that stalls", async () => {
  const answers = createServer((req, res) => {
    if (req.url === "/small") return void res.writeHead(404).end("a".repeat(LIMIT));
    if (req.url === "/echo") return void req.pipe(res);
    if (req.url === "/announced") {
      res.writeHead(200, { "content-length": String(10 * LIMIT) });
      return void res.end("a".repeat(10 * LIMIT));
    }
    if (req.url === "/stalls") return void res.writeHead(200).write("a");
    // Endless: a chunk whenever the socket takes one, until the client goes away.
    const more = () => {
      while (!res.destroyed && res.write(bytes(256)));
      if (!res.destroyed) res.once("drain", more);
    };
    res.on("close", () => res.removeAllListeners("drain"));
    more();
  });
  await new Promise<void>((resolve) => answers.listen(0, "127.0.0.1", resolve));
  const answersPort = (answers.address() as AddressInfo).port;
  const at = (path: string, o: { body?: string; timeoutMs?: number } = {}) =>
    httpRequest(`http://127.0.0.1:${answersPort}${path}`, {
      method: o.body === undefined ? "GET" : "POST",
      body: o.body,
      timeoutMs: o.timeoutMs ?? 10_000,
      maxBytes: LIMIT,
    });
  try {
    const small = await at("/small");
    assert.deepEqual([small.status, small.ok, small.text.length], [404, false, LIMIT]);
    const echo = await at("/echo", { body: "hé" });
    assert.deepEqual([echo.status, echo.ok, echo.text], [200, true, "hé"]);
    await assert.rejects(at("/announced"), {
      message: `the body is announced as ${10 * LIMIT} bytes, more than the ${LIMIT} allowed`,
      status: 200,
    });
    await assert.rejects(at("/endless"), { message: `the body is larger than the ${LIMIT} bytes allowed`, status: 200 });
    await assert.rejects(at("/stalls", { timeoutMs: 300 }), { name: "TimeoutError", message: /within 300 ms/ });
  } finally {
    answers.closeAllConnections();
    answers.close();
  }
  await new Promise((resolve) => answers.once("close", resolve));
  await assert.rejects(at("/small"), { code: "ECONNREFUSED" }, "nothing listens there any more");
});
