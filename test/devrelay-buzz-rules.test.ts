/**
 * The dev relay keeps today's Buzz rules (docs/dev-relay.md): one frame quota per pubkey
 * across every connection and every HTTP bridge call of the key, an over-quota EVENT refused
 * with `OK false rate-limited:`, each socket closed after `--max-connection-lifetime`, a
 * NIP-11 document stating the real limits with the relay's own key as `self`, workflow output
 * and key rotation through the admin API, and NIP-AW work status written and read by channel
 * members only.
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { generateSecretKey, getPublicKey, verifyEvent } from "nostr-tools";
import { startDevRelay, type DevRelay } from "../src/devrelay/index.js";
import { KIND } from "../src/nostr/kinds.js";
import { nip98Post, RawClient, sign } from "../kit/raw-client.js";
import { waitFor } from "../kit/wait.js";

const cli = fileURLToPath(new URL("../dist/cli.js", import.meta.url));
const relays: DevRelay[] = [];
const clients: RawClient[] = [];
const children: ChildProcess[] = [];
after(async () => {
  for (const c of clients) await c.close();
  for (const r of relays) await r.close();
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
});

const RATE_LIMITED = /^rate-limited: quota exceeded; retry in \d+s$/;

/** A JSON document read in a test. */
type Json = any;
const nip11 = async (url: string): Promise<Json> => (await fetch(url, { headers: { accept: "application/nostr+json" } })).json();

async function relay(o: Parameters<typeof startDevRelay>[0] = {}): Promise<DevRelay> {
  const r = await startDevRelay(o);
  relays.push(r);
  return r;
}
async function authed(r: DevRelay, sk: Uint8Array): Promise<RawClient> {
  const c = await RawClient.authed(r.url, sk);
  clients.push(c);
  return c;
}

describe("one quota per key", () => {
  it("two connections and the HTTP bridge of one key draw from one bucket; another key has its own", async () => {
    const r = await relay({ limits: { frameQuota: { frames: 6, windowMs: 60_000 } } });
    const alice = generateSecretKey();
    const bob = generateSecretKey();
    const ch = await r.createChannel({ name: "q", members: [getPublicKey(alice), getPublicKey(bob)] });
    const one = await authed(r, alice);
    const two = await authed(r, alice);
    const third = await authed(r, bob);
    assert.equal((await one.req("a", { kinds: [1] })).closed, undefined);
    assert.equal((await two.req("b", { kinds: [1] })).closed, undefined);
    assert.equal((await nip98Post(r.httpUrl, "/query", [{ kinds: [1] }], alice)).status, 200);
    assert.equal((await one.publish(sign({ kind: 9, content: "1", tags: [["h", ch]] }, alice)))[2], true);
    assert.equal((await two.publish(sign({ kind: 9, content: "2", tags: [["h", ch]] }, alice)))[2], true);
    assert.equal((await nip98Post(r.httpUrl, "/count", [{ kinds: [1] }], alice)).status, 200);
    // Six used across three paths: the seventh is refused wherever it comes from.
    const ev = sign({ kind: 9, content: "over", tags: [["h", ch]] }, alice);
    const refused = await two.publish(ev);
    assert.deepEqual(refused.slice(0, 3), ["OK", ev.id, false], "an over-quota EVENT is answered by its own OK false");
    assert.match(String(refused[3]), RATE_LIMITED);
    assert.match((await one.req("c", { kinds: [1] })).closed ?? "", RATE_LIMITED);
    const http = await nip98Post(r.httpUrl, "/query", [{ kinds: [1] }], alice);
    assert.equal(http.status, 429);
    assert.match(http.body.error, RATE_LIMITED);
    assert.deepEqual(r.keyUsage(getPublicKey(alice)), { wsFrames: 4, httpCalls: 2, refused: 3 });
    assert.equal((await third.req("d", { kinds: [1] })).closed, undefined, "bob's bucket is his own");
    assert.equal(
      (await nip98Post(r.httpUrl, "/query", [{ kinds: [9], "#h": [ch] }], bob)).body.length,
      2,
      "the refused event was not stored",
    );
  });
});

describe("connection lifetime", () => {
  it("closes each socket after the lifetime, stated in NIP-11; a new socket authenticates afresh", async () => {
    const r = await relay({ limits: { maxConnectionLifetimeMs: 1500 } });
    const alice = generateSecretKey();
    r.addRelayMember(getPublicKey(alice));
    const t0 = Date.now();
    const c = await authed(r, alice);
    await waitFor(() => c.closed, { timeoutMs: 5000, what: "the relay closing the socket" });
    assert.ok(Date.now() - t0 >= 1400, "not before the lifetime");
    const doc = await nip11(`${r.httpUrl}/`);
    assert.equal(doc.limitation.max_connection_lifetime_seconds, 1.5);
    const again = await authed(r, alice);
    assert.equal((await again.req("s", { kinds: [1] })).closed, undefined);
  });

  it("takes --max-connection-lifetime from the command line and refuses a malformed one", async () => {
    const start = (args: string[]) => {
      const child = spawn(process.execPath, [cli, "dev-relay", ...args], { stdio: ["ignore", "pipe", "pipe"] });
      children.push(child);
      return child;
    };
    const ok = start(["--max-connection-lifetime", "30s"]);
    const url = (await createInterface({ input: ok.stdout! })[Symbol.asyncIterator]().next()).value as string;
    const doc = await nip11(url.replace("ws:", "http:"));
    assert.equal(doc.limitation.max_connection_lifetime_seconds, 30);
    const bad = start(["--max-connection-lifetime", "soon"]);
    let err = "";
    bad.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    assert.equal(await new Promise((r) => bad.once("exit", r)), 1);
    assert.match(err, /--max-connection-lifetime must be a duration of at least 1s such as 30s or 15m, or off; got 'soon'/);
  });
});

describe("NIP-11, workflow output, key rotation, work status", () => {
  it("serves its limits and its own key as self; a workflow wake is signed by that key; a rotation changes both", async () => {
    const r = await relay({ limits: { frameQuota: { frames: 40, windowMs: 5000 } } });
    const owner = generateSecretKey();
    const agent = getPublicKey(generateSecretKey());
    const ch = await r.createChannel({ name: "wf", members: [getPublicKey(owner), agent] });
    const res = await fetch(`${r.httpUrl}/`, { headers: { accept: "application/nostr+json" } });
    assert.equal(res.headers.get("content-type"), "application/nostr+json");
    assert.equal(res.headers.get("access-control-allow-origin"), "*");
    const doc = (await res.json()) as Json;
    assert.equal(doc.self, r.relayPubkey);
    assert.deepEqual(doc.limitation.rate_limits, {
      frames: 40,
      window_seconds: 5,
      per: "pubkey",
      http_calls: 300,
      http_window_seconds: 60,
    });
    assert.equal(doc.limitation.max_content_length, 256 * 1024);
    assert.equal(doc.limitation.max_connection_lifetime_seconds, undefined, "no lifetime unless one is set");

    const admin = (op: string, body: object) =>
      fetch(`${r.httpUrl}/admin/${op}`, {
        method: "POST",
        headers: { authorization: `Bearer ${r.adminToken}` },
        body: JSON.stringify(body),
      }).then(async (x) => ({ status: x.status, body: (await x.json()) as Json }));
    const woke = await admin("workflow-wake", { channel: ch, owner: getPublicKey(owner), agent, content: "go" });
    assert.equal(woke.status, 200);
    assert.equal(woke.body.pubkey, r.relayPubkey);
    const [ev] = await nip98Post(r.httpUrl, "/query", [{ ids: [woke.body.id] }], owner).then((x) => x.body);
    assert.ok(verifyEvent(ev));
    for (const t of [
      ["buzz:workflow", "true"],
      ["buzz:workflow-owner", getPublicKey(owner)],
      ["buzz:workflow-mention", agent],
      ["p", agent],
      ["h", ch],
    ])
      assert.ok(
        ev.tags.some((x: string[]) => x[0] === t[0] && x[1] === t[1]),
        `tag ${t[0]}`,
      );
    assert.equal(
      (await admin("workflow-wake", { channel: ch, owner: agent, agent, sign_as: "previous" })).status,
      400,
      "no previous key yet",
    );
    assert.match(
      (await admin("workflow-wake", { channel: ch, owner: getPublicKey(generateSecretKey()), agent })).body.error,
      /is not a member of channel/,
    );

    const before = r.relayPubkey;
    const rotated = await admin("rotate-key", {});
    assert.notEqual(rotated.body.self, before);
    assert.equal((await nip11(`${r.httpUrl}/`)).self, rotated.body.self);
    const stale = await admin("workflow-wake", { channel: ch, owner: getPublicKey(owner), agent, sign_as: "previous" });
    assert.equal(stale.body.pubkey, before, "signed with the key from before the rotation");

    assert.equal((await admin("set-nip11", { status: 404, raw: "gone" })).status, 200);
    assert.equal((await fetch(`${r.httpUrl}/`)).status, 404);
    await admin("set-nip11", {});
    assert.equal((await fetch(`${r.httpUrl}/`)).status, 200);
  });

  it("kind 30181: d must equal h, members write and read it, others neither", async () => {
    const r = await relay();
    const member = generateSecretKey();
    const outsider = generateSecretKey();
    const ch = await r.createChannel({ name: "ws", type: "private", members: [getPublicKey(member)] });
    r.addRelayMember(getPublicKey(outsider));
    const c = await authed(r, member);
    const status = (d: string) =>
      sign(
        {
          kind: KIND.workStatus,
          content: '{"v":1}',
          tags: [
            ["h", ch],
            ["d", d],
          ],
        },
        member,
      );
    const wrong = await c.publish(status("another"));
    assert.equal(wrong[2], false);
    assert.match(String(wrong[3]), /kind 30181 needs exactly one d tag equal to its h tag/);
    assert.equal((await c.publish(status(ch)))[2], true);
    const o = await authed(r, outsider);
    assert.equal(
      (
        await o.publish(
          sign(
            {
              kind: KIND.workStatus,
              content: "{}",
              tags: [
                ["h", ch],
                ["d", ch],
              ],
            },
            outsider,
          ),
        )
      )[2],
      false,
    );
    assert.equal((await o.req("x", { kinds: [KIND.workStatus] })).events.length, 0, "an outsider does not see it");
    assert.equal((await c.req("y", { kinds: [KIND.workStatus] })).events.length, 1, "a member does");
  });
});
