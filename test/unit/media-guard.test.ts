/**
 * Where the bridge's signed media authorization may go, and which addresses count as
 * private, judged at the servers the downloader talks to (docs/conversations.md
 * "Attachments"): the relay's media path gets the authorization, the relay's other paths
 * and every other host never do, even when the relay itself redirects there; a private
 * address is refused in every way it can be written.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { LookupAddress } from "node:dns";
import { generateSecretKey } from "nostr-tools";
import { MediaFetcher } from "../../src/buzz/media-fetch.js";
import { isNonPublic, MediaHostPolicy, NonPublicAddressError, publicOnlyLookup } from "../../src/buzz/media-guard.js";
import { countingServer, PNG, sha256, type CountingServer } from "../fixtures/media.js";

/** A server on 127.0.0.1 that keeps the authorization header of every request, by path. */
async function authRecorder(route: (path: string) => { redirect: string } | { body: Buffer }) {
  const seen: { path: string; auth: string | undefined }[] = [];
  const server: CountingServer = await countingServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    seen.push({ path, auth: req.headers.authorization });
    const r = route(path);
    if ("redirect" in r) res.writeHead(302, { location: r.redirect }).end();
    else res.writeHead(200, { "content-type": "image/png", "content-length": r.body.length }).end(r.body);
  });
  return { server, seen };
}

describe("media authorization goes to the relay's media path only", () => {
  let relay: Awaited<ReturnType<typeof authRecorder>>;
  let third: Awaited<ReturnType<typeof authRecorder>>;
  before(async () => {
    third = await authRecorder(() => ({ body: PNG }));
    relay = await authRecorder((path) => (path.startsWith("/media/go") ? { redirect: `${third.server.url}/ok.png` } : { body: PNG }));
  });
  after(async () => {
    await Promise.all([relay.server.close(), third.server.close()]);
  });
  const fetcher = (allowHosts: string[]) =>
    new MediaFetcher({ relayOrigin: relay.server.url, key: generateSecretKey(), settings: () => ({ allowHosts, timeoutMs: 5000 }) });

  it("the relay's /media/ path is asked with the bridge's authorization", async () => {
    const got = await fetcher([]).fetch(`${relay.server.url}/media/a.png`, sha256(PNG), 1024);
    assert.ok(got.ok, JSON.stringify(got));
    const asked = relay.seen.filter((s) => s.path === "/media/a.png");
    assert.equal(asked.length, 1);
    assert.match(asked[0]!.auth ?? "", /^Nostr /, "signed authorization sent to the relay's media path");
  });

  it("the relay's origin outside /media/ (an allowed host) is asked without it", async () => {
    const got = await fetcher([relay.server.host]).fetch(`${relay.server.url}/files/a.png`, sha256(PNG), 1024);
    assert.ok(got.ok, JSON.stringify(got));
    assert.equal(got.via, "allowed");
    const asked = relay.seen.filter((s) => s.path === "/files/a.png");
    assert.deepEqual(asked, [{ path: "/files/a.png", auth: undefined }]);
  });

  it("a third-party host, reached by the relay's own redirect, never sees it", async () => {
    const got = await fetcher([third.server.host]).fetch(`${relay.server.url}/media/go.png`, sha256(PNG), 1024);
    assert.ok(got.ok, JSON.stringify(got));
    assert.match(relay.seen.find((s) => s.path === "/media/go.png")?.auth ?? "", /^Nostr /, "the relay was asked with it");
    assert.ok(third.seen.length > 0, "the third party was asked");
    assert.deepEqual(
      third.seen.map((s) => s.auth),
      third.seen.map(() => undefined),
      "no authorization reached the third party",
    );
  });
});

/** 127.0.0.1, 169.254.169.254 and 10.0.0.1 as they can be written; each must count as private. */
const PRIVATE_FORMS = [
  "127.0.0.1",
  "::ffff:127.0.0.1", // IPv4-mapped, dotted
  "::ffff:7f00:1", // IPv4-mapped, hex (how Node's URL writes it)
  "0:0:0:0:0:ffff:7f00:1",
  "::ffff:a9fe:a9fe", // 169.254.169.254, mapped
  "::127.0.0.1", // IPv4-compatible, dotted
  "::7f00:1", // IPv4-compatible, hex
  "::a9fe:a9fe",
  "::ffff:0:7f00:1", // IPv4-translated (RFC 2765)
  "::ffff:0:192.168.10.20", // translated, dotted, several digits in each part
  "::ffff:0:127.0.0.1%eth0", // with a zone
  "::5", // IPv4-compatible form of 0.0.0.5
  "2002:7f00:1::", // 6to4 of 127.0.0.1
  "2002:a00:1::1", // 6to4 of 10.0.0.1
  "2130706433", // decimal
  "0177.0.0.1", // octal
  "0x7f.0.0.1", // hex
  "0x7f000001",
  "0",
  "0.0.0.0",
  "127.0.0.1.", // trailing dot
  "::1",
  "::",
];
const PUBLIC_FORMS = [
  "8.8.8.8",
  "::ffff:8.8.8.8",
  "::ffff:808:808",
  "::ffff:0:8.8.8.8",
  "::ffff:0:93.184.216.34", // translated, several digits in each part
  "::ffff:0:93.184.216.34%eth0", // a zone is no part of the address
  "2606:4700:4700::1111",
  "2002:808:808::1",
];

describe("the private-address guard takes every textual form", () => {
  it("isNonPublic: each form of a private address is private, public ones stay public", () => {
    for (const a of PRIVATE_FORMS) assert.equal(isNonPublic(a), true, `${a} is private`);
    for (const a of PUBLIC_FORMS) assert.equal(isNonPublic(a), false, `${a} is public`);
  });

  it("the connection's own look-up refuses each form (the socket would connect to what it returns)", async () => {
    const look = (host: string) =>
      new Promise<Error | null>((resolve) =>
        publicOnlyLookup(host, { all: true }, ((err: Error | null, _a: LookupAddress[]) => resolve(err)) as never),
      );
    for (const a of PRIVATE_FORMS) {
      const err = await look(a);
      // A form the resolver cannot parse fails the look-up, which is a refusal too.
      assert.ok(err, `${a} refused`);
      if (!(err instanceof NonPublicAddressError)) assert.match(err.message, /ENOTFOUND|EAI_|getaddrinfo/, `${a}: ${err.message}`);
    }
    assert.equal(await look("8.8.8.8"), null, "a public address passes");
    const refused = await look("127.0.0.1");
    assert.ok(refused instanceof NonPublicAddressError);
    assert.equal(refused.name, "NonPublicAddressError");
    assert.equal(refused.message, "127.0.0.1 resolves to 127.0.0.1, which is not a public address");
  });

  it("the look-up answers as asked: every address with all, else the first with its family", async () => {
    const all = await new Promise<unknown[]>((resolve) =>
      publicOnlyLookup("8.8.8.8", { all: true }, ((_e: Error | null, a: LookupAddress[]) => resolve([a])) as never),
    );
    assert.deepEqual(all, [[{ address: "8.8.8.8", family: 4 }]]);
    const one = await new Promise<unknown[]>((resolve) =>
      publicOnlyLookup("8.8.8.8", {}, ((_e: Error | null, a: string, f: number) => resolve([a, f])) as never),
    );
    assert.deepEqual(one, ["8.8.8.8", 4]);
  });

  it("a URL naming a private address in any form is refused unless the operator listed it", () => {
    const policy = new MediaHostPolicy("http://relay.example", []);
    for (const host of ["2130706433", "0177.0.0.1", "0x7f.1", "0", "127.0.0.1.", "[::ffff:127.0.0.1]", "[::127.0.0.1]", "[::ffff:7f00:1]"])
      assert.deepEqual(policy.verdict(new URL(`http://${host}/x.png`)), { allowed: false }, host);
  });
});

describe("attachments.allow_hosts: which URLs may be fetched, and under which rule", () => {
  it("a name allows any port of it, case and spaces aside, and must resolve to public addresses; host:port allows that port only", () => {
    const policy = new MediaHostPolicy("https://relay.example", [" Files.Example.COM ", "cdn.example:8443"]);
    const name = { allowed: true, via: "allowed", publicOnly: true };
    assert.deepEqual(policy.verdict(new URL("https://files.example.com/a.png")), name);
    assert.deepEqual(policy.verdict(new URL("http://FILES.example.com:8080/a.png")), name);
    assert.deepEqual(policy.verdict(new URL("https://cdn.example:8443/a.png")), name);
    assert.deepEqual(policy.verdict(new URL("https://cdn.example/a.png")), { allowed: false });
    assert.deepEqual(policy.verdict(new URL("https://cdn.example:9443/a.png")), { allowed: false });
    assert.deepEqual(policy.verdict(new URL("ftp://files.example.com/a.png")), { allowed: false }, "http and https only");
  });

  it("an address the operator wrote is reachable as written, private or not", () => {
    const policy = new MediaHostPolicy("https://relay.example", ["10.0.0.7", "[fd00::7]"]);
    for (const url of ["http://10.0.0.7/a.png", "http://[fd00::7]:8080/a.png"])
      assert.deepEqual(policy.verdict(new URL(url)), { allowed: true, via: "allowed", publicOnly: false }, url);
  });

  it("only the relay's own origin is the relay: another host's /media/ path is not, and gets no authorization", () => {
    const policy = new MediaHostPolicy("https://relay.example", ["files.example.com"]);
    assert.deepEqual(policy.verdict(new URL("https://relay.example/media/a.png")), { allowed: true, via: "relay", publicOnly: false });
    assert.deepEqual(policy.verdict(new URL("https://elsewhere.example/media/a.png")), { allowed: false });
    assert.deepEqual(policy.verdict(new URL("https://files.example.com/media/a.png")), { allowed: true, via: "allowed", publicOnly: true });
    assert.equal(policy.isRelay(new URL("https://relay.example/files/a.png")), true);
    assert.equal(policy.isRelay(new URL("https://relay.example:8443/media/a.png")), false);
    assert.equal(policy.isRelay(new URL("https://files.example.com/media/a.png")), false);
  });
});
