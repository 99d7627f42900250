/** NIP-42 as Buzz enforces it on the dev relay: challenge, exact relay tag, members only, timeout. */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { generateSecretKey, getPublicKey } from "nostr-tools";
import { startDevRelay, type DevRelay } from "../../src/devrelay/index.js";
import { RawClient, sign } from "../../kit/raw-client.js";
import { waitFor } from "../../kit/wait.js";

describe("dev relay NIP-42", () => {
  let relay: DevRelay;
  const alice = generateSecretKey();
  const stranger = generateSecretKey();
  const clients: RawClient[] = [];
  const open = async (url = relay.url) => {
    const c = await RawClient.open(url);
    clients.push(c);
    return c;
  };

  // The relay's own patience for NIP-42 (5 s): a test that authenticates twice on a loaded
  // machine must not race a short deadline. The timeout itself has a relay of its own below.
  before(async () => {
    relay = await startDevRelay();
    relay.addRelayMember(getPublicKey(alice));
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await relay.close();
  });

  it("sends a challenge on connect and accepts a member with the exact relay tag", async () => {
    const c = await open();
    const challenge = await c.next((f) => f[0] === "AUTH");
    assert.equal(typeof challenge[1], "string");
    const ok = await c.auth(alice, relay.url);
    assert.deepEqual(ok.slice(2), [true, ""]);
  });

  it("refuses a relay tag with a trailing slash", async () => {
    const c = await open();
    const ok = await c.auth(alice, `${relay.url}/`);
    assert.equal(ok[2], false);
    assert.match(String(ok[3]), /^auth-required: verification failed/);
  });

  it("refuses a wrong challenge and keeps the failure for the connection", async () => {
    const c = await open();
    const bad = await c.auth(alice, relay.url, "not-the-challenge");
    assert.equal(bad[2], false);
    const again = await c.auth(alice, relay.url);
    assert.deepEqual(again.slice(2), [false, "auth-required: authentication already failed"]);
  });

  it("tells a non-member it is not a relay member", async () => {
    const c = await open();
    const ok = await c.auth(stranger, relay.url);
    assert.deepEqual(ok.slice(2), [false, "restricted: not a relay member"]);
  });

  it("answers REQ and EVENT before auth with auth-required", async () => {
    const c = await open();
    const r = await c.req("s1", { kinds: [9] });
    assert.match(r.closed ?? "", /^auth-required: /);
    const ok = await c.publish(sign({ kind: 1, content: "hi" }, alice));
    assert.equal(ok[2], false);
    assert.match(String(ok[3]), /^auth-required: /);
  });

  it("disconnects a client that does not authenticate in time", async () => {
    const impatient = await startDevRelay({ authTimeoutMs: 300 });
    try {
      const c = await open(impatient.url);
      const notice = await c.next((f) => f[0] === "NOTICE");
      assert.match(String(notice[1]), /^auth-required: no NIP-42 authentication within the time allowed/);
      await new Promise<void>((resolve) => (c.closed ? resolve() : c.ws.once("close", () => resolve())));
      assert.equal(c.closed, true);
    } finally {
      await impatient.close();
    }
  });

  it("accepts the relay tag built from the Host header (reverse proxy)", async () => {
    const c = await RawClient.open(relay.url, { host: "buzz.example.test" });
    clients.push(c);
    const wrong = await c.auth(alice, relay.url);
    assert.equal(wrong[2], false);
    const c2 = await RawClient.open(relay.url, { host: "buzz.example.test" });
    clients.push(c2);
    const ok = await c2.auth(alice, "ws://buzz.example.test");
    assert.equal(ok[2], true);
  });

  it("re-challenges: a fresh AUTH answer is accepted, a repeated one refused", async () => {
    const c = await open();
    assert.equal((await c.auth(alice, relay.url))[2], true);
    assert.deepEqual((await c.auth(alice, relay.url)).slice(2), [false, "auth-required: already authenticated"]);
    c.challenge = undefined;
    relay.rechallenge();
    await c.next((f) => f[0] === "AUTH");
    assert.equal((await c.auth(alice, relay.url))[2], true);
  });

  it("works with nostr-tools' Relay signing the tag without a trailing slash", async () => {
    const { Relay, useWebSocketImplementation } = await import("nostr-tools/relay");
    const { finalizeEvent } = await import("nostr-tools");
    const WebSocket = (await import("ws")).default;
    useWebSocketImplementation(WebSocket);
    const r = new Relay(relay.url);
    await r.connect();
    // The relay's AUTH challenge follows the connect; r.auth needs it (nostr-tools keeps it privately).
    await waitFor(() => (r as unknown as { challenge?: string }).challenge, { what: "the relay's AUTH challenge" });
    const msg = await r.auth(async (t) => {
      t.tags = t.tags.map((x) => (x[0] === "relay" ? ["relay", x[1]!.replace(/\/$/, "")] : x));
      return finalizeEvent(t, alice);
    });
    assert.equal(msg, "");
    r.close();
  });
});
