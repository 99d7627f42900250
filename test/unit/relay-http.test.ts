import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage } from "node:http";
import { createHash } from "node:crypto";
import type { AddressInfo } from "node:net";
import type { Event } from "nostr-tools";
import { RelayHttp } from "../../src/relay/http.js";
import { RelayHttpError } from "../../src/relay/errors.js";
import { verifySignature } from "../../src/nostr/verify.js";
import { identity } from "../fixtures/relay-helpers.js";

const me = identity();
const cleanup: (() => unknown)[] = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

/** An HTTP bridge that answers each request from a script of [status, body] pairs. */
async function scripted(script: [number, string][]) {
  const seen: { auth: Event; body: Buffer; url: string }[] = [];
  const server = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const header = String(req.headers.authorization ?? "");
    seen.push({
      auth: JSON.parse(Buffer.from(header.replace(/^Nostr /, ""), "base64").toString()),
      body: Buffer.concat(chunks),
      url: req.url ?? "",
    });
    const [status, body] = script[Math.min(seen.length - 1, script.length - 1)]!;
    res.writeHead(status, { "content-type": "application/json" }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanup.push(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/`, seen };
}

test("429 with a retry hint and a 503 are retried, each attempt freshly signed over the exact body", async () => {
  const relay = await scripted([
    [429, JSON.stringify({ error: "rate-limited: quota exceeded; retry in 1s" })],
    [503, JSON.stringify({ error: "busy" })],
    [200, "[]"],
  ]);
  const http = new RelayHttp({ url: relay.url, secretKey: me.sk, retryBaseMs: 20 });
  const t0 = Date.now();
  assert.deepEqual(await http.query([{ kinds: [9], "#h": ["x"] }]), []);
  assert.ok(Date.now() - t0 >= 900, "the relay's retry hint was honoured");
  assert.equal(relay.seen.length, 3);
  const ids = new Set(relay.seen.map((s) => s.auth.id));
  assert.equal(ids.size, 3, "a fresh NIP-98 event per attempt");
  for (const s of relay.seen) {
    const tag = (n: string) => s.auth.tags.find((t) => t[0] === n)?.[1];
    assert.equal(verifySignature(s.auth), true);
    assert.equal(tag("u"), `${relay.url.replace(/^ws/, "http").replace(/\/$/, "")}/query`);
    assert.equal(tag("payload"), createHash("sha256").update(s.body).digest("hex"));
    assert.equal(s.url, "/query");
  }
});

test("a 401/403 is not retried and the error carries the relay's message", async () => {
  const relay = await scripted([[403, JSON.stringify({ error: "relay_membership_required", message: "join the relay first" })]]);
  const http = new RelayHttp({ url: relay.url, secretKey: me.sk, retryBaseMs: 20 });
  await assert.rejects(
    http.query([{ kinds: [0] }]),
    (e: unknown) => e instanceof RelayHttpError && e.status === 403 && /join the relay first/.test(e.message),
  );
  assert.equal(relay.seen.length, 1);
});

test("an unreachable relay fails with RelayHttpError after bounded attempts", async () => {
  const http = new RelayHttp({ url: "ws://127.0.0.1:1", secretKey: me.sk, retryBaseMs: 10, attempts: 2 });
  await assert.rejects(http.count([{ kinds: [9] }]), RelayHttpError);
  assert.equal(http.metrics.requests, 2);
});
