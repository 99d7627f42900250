/**
 * Attachments over real HTTP on 127.0.0.1: the dev relay's media routes (upload, GET and
 * HEAD with Blossom or NIP-98 auth, members only) and the bridge's downloader against them
 * and against hostile servers — every refusal named, and no connection made where none may be.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { generateSecretKey, getPublicKey } from "nostr-tools";
import { startDevRelay, type DevRelay } from "../../src/devrelay/index.js";
import { MediaFetcher } from "../../src/buzz/media-fetch.js";
import { blossomHeader } from "../../src/nostr/blossom.js";
import { nip98Header } from "../../src/nostr/nip98.js";
import { fileServer, PNG, redirectServer, sha256, slowLorisServer, upload, type CountingServer } from "../fixtures/media.js";

describe("media: the dev relay's routes and the bridge's downloader", () => {
  let relay: DevRelay;
  const member = generateSecretKey();
  const outsider = generateSecretKey();
  let plain: CountingServer;
  let slow: CountingServer;
  let bounce: CountingServer;
  let allowHosts: string[] = [];
  const fetcher = (timeoutMs = 1500) =>
    new MediaFetcher({ relayOrigin: relay.httpUrl, key: member, settings: () => ({ allowHosts, timeoutMs }) });

  before(async () => {
    relay = await startDevRelay();
    await relay.createChannel({ name: "general", members: [getPublicKey(member)] });
    plain = await fileServer({
      "/ok.png": { body: PNG, type: "image/png" },
      "/huge.bin": { body: Buffer.alloc(10), type: "application/octet-stream", length: 2_000_000_000 },
      "/big.txt": { body: Buffer.alloc(5000, 0x61), type: "text/plain" },
    });
    slow = await slowLorisServer();
    bounce = await redirectServer(`${plain.url}/ok.png`);
  });
  after(async () => {
    await Promise.all([plain.close(), slow.close(), bounce.close()]);
    await relay.close();
  });

  it("an upload is served back to members only, by Blossom or NIP-98 auth, with its type", async () => {
    const d = await upload(relay.httpUrl, member, PNG, "image/png");
    assert.equal(d.sha256, sha256(PNG));
    assert.match(d.url, new RegExp(`^${relay.httpUrl}/media/${d.sha256}\\.png$`));
    const get = (auth?: string, method = "GET", url = d.url) => fetch(url, { method, headers: auth ? { authorization: auth } : {} });
    assert.equal((await get()).status, 401, "no auth");
    assert.equal((await get(blossomHeader("get", d.sha256, outsider))).status, 403, "not a relay member");
    assert.equal((await get(blossomHeader("get", sha256("other"), member))).status, 401, "auth for another blob");
    const ok = await get(blossomHeader("get", d.sha256, member));
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get("content-type"), "image/png");
    assert.deepEqual(Buffer.from(await ok.arrayBuffer()), PNG);
    assert.equal((await get(nip98Header(d.url, "GET", undefined, member))).status, 200, "NIP-98 works too");
    const head = await get(blossomHeader("get", d.sha256, member), "HEAD");
    assert.equal(head.headers.get("content-length"), String(PNG.length));
    assert.equal(
      (await get(blossomHeader("get", d.sha256, member), "GET", d.url.replace(/\.png$/, ".jpg"))).status,
      404,
      "wrong extension",
    );
  });

  it("downloads from the relay's media endpoint with the bridge's authorization", async () => {
    const d = await upload(relay.httpUrl, member, PNG, "image/png");
    const got = await fetcher().fetch(d.url, d.sha256, 1024);
    assert.ok(got.ok, JSON.stringify(got));
    assert.equal(got.via, "relay");
    assert.deepEqual(got.bytes, PNG);
  });

  it("refuses a host that is neither the relay nor allowed, without connecting to it", async () => {
    allowHosts = [];
    const got = await fetcher().fetch(`${plain.url}/ok.png`, sha256(PNG), 1024);
    assert.equal(got.ok ? "ok" : got.reason, "not-allowed-host");
    const meta = await fetcher().fetch("http://169.254.169.254/latest/meta-data/", sha256(PNG), 1024);
    assert.equal(meta.ok ? "ok" : meta.reason, "not-allowed-host");
    assert.equal(plain.hits(), 0, "no request reached the server");
  });

  it("an allowed host by name must resolve to a public address; its address written out is used as it is", async () => {
    allowHosts = [plain.host.replace("127.0.0.1", "localhost")];
    const byName = await fetcher().fetch(`${plain.url.replace("127.0.0.1", "localhost")}/ok.png`, sha256(PNG), 1024);
    assert.equal(byName.ok ? "ok" : byName.reason, "private-address");
    assert.equal(plain.hits(), 0, "refused before connecting");
    allowHosts = [plain.host];
    const byAddress = await fetcher().fetch(`${plain.url}/ok.png`, sha256(PNG), 1024);
    assert.ok(byAddress.ok, JSON.stringify(byAddress));
    assert.equal(byAddress.via, "allowed");
  });

  it("refuses a body whose sha256 is not the claimed one, and sizes over the limit announced or streamed", async () => {
    allowHosts = [plain.host];
    const wrong = await fetcher().fetch(`${plain.url}/ok.png`, sha256("something else"), 1024);
    assert.equal(wrong.ok ? "ok" : wrong.reason, "hash-mismatch");
    const huge = await fetcher().fetch(`${plain.url}/huge.bin`, sha256("x"), 1024);
    assert.equal(huge.ok ? "ok" : huge.reason, "too-large");
    const big = await fetcher().fetch(`${plain.url}/big.txt`, sha256(Buffer.alloc(5000, 0x61)), 1000);
    assert.equal(big.ok ? "ok" : big.reason, "too-large");
  });

  it("a server that drips its body is cut off at the deadline", async () => {
    allowHosts = [slow.host];
    const got = await fetcher(800).fetch(`${slow.url}/drip.png`, sha256(PNG), 1024 * 1024);
    assert.equal(got.ok ? "ok" : got.reason, "timeout");
  });

  it("follows a redirect only onto an allowed host", async () => {
    allowHosts = [bounce.host];
    const before = plain.hits();
    const off = await fetcher().fetch(`${bounce.url}/go`, sha256(PNG), 1024);
    assert.equal(off.ok ? "ok" : off.reason, "redirect-not-allowed");
    assert.equal(plain.hits(), before, "the redirect's target was not contacted");
    allowHosts = [bounce.host, plain.host];
    const on = await fetcher().fetch(`${bounce.url}/go`, sha256(PNG), 1024);
    assert.ok(on.ok, JSON.stringify(on));
  });
});
