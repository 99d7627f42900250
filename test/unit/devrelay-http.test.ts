/** The NIP-98 HTTP bridge: /query, /events, /count, replay guard and membership. */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { finalizeEvent, generateSecretKey, getPublicKey, type Event } from "nostr-tools";
import { startDevRelay, type DevRelay } from "../../src/devrelay/index.js";
import { nip98Header, nip98Post, sign, now } from "../../kit/raw-client.js";

describe("dev relay HTTP bridge", () => {
  let relay: DevRelay;
  const alice = generateSecretKey();
  const bob = generateSecretKey();
  const stranger = generateSecretKey();
  const [A, B] = [getPublicKey(alice), getPublicKey(bob)];
  let ch: string;
  let priv: string;

  before(async () => {
    relay = await startDevRelay();
    ch = await relay.createChannel({ name: "general", about: "chat", members: [A, B] });
    priv = await relay.createChannel({ name: "secret", type: "private", members: [A] });
  });
  after(() => relay.close());

  it("POST /events stores an event that POST /query and /count then return", async () => {
    const ev = sign({ kind: 9, tags: [["h", ch]], content: "over http" }, alice);
    const w = await nip98Post(relay.httpUrl, "/events", ev, alice);
    assert.equal(w.status, 200);
    assert.deepEqual(w.body, { event_id: ev.id, accepted: true, message: "" });
    const q = await nip98Post(relay.httpUrl, "/query", [{ kinds: [9], "#h": [ch] }], bob);
    assert.equal(q.status, 200);
    assert.deepEqual(
      (q.body as Event[]).map((e) => e.id),
      [ev.id],
    );
    const c = await nip98Post(relay.httpUrl, "/count", [{ kinds: [9], "#h": [ch] }], bob);
    assert.deepEqual(c.body, { count: 1 });
  });

  it("discovers channels by 39002 #p self and reads their 39000", async () => {
    const mine = await nip98Post(relay.httpUrl, "/query", [{ kinds: [39002], "#p": [B] }], bob);
    const ids = (mine.body as Event[]).map((e) => e.tags.find((t) => t[0] === "d")![1]);
    assert.deepEqual(ids, [ch]);
    const meta = await nip98Post(relay.httpUrl, "/query", [{ kinds: [39000], "#d": ids }], bob);
    assert.equal((meta.body as Event[])[0]!.tags.find((t) => t[0] === "name")![1], "general");
  });

  it("hides a private channel from a non-member and refuses its writes with 403", async () => {
    const secret = sign({ kind: 9, tags: [["h", priv]], content: "s" }, alice);
    assert.equal((await nip98Post(relay.httpUrl, "/events", secret, alice)).status, 200);
    const q = await nip98Post(relay.httpUrl, "/query", [{ "#h": [priv] }, { ids: [secret.id] }], bob);
    assert.deepEqual(q.body, []);
    const w = await nip98Post(relay.httpUrl, "/events", sign({ kind: 9, tags: [["h", priv]] }, bob), bob);
    assert.equal(w.status, 403);
    assert.equal(w.body.accepted, false);
    assert.equal(w.body.message, "restricted: not a channel member");
  });

  it("refuses a replayed NIP-98 token", async () => {
    const body = [{ kinds: [9] }];
    const header = nip98Header(`${relay.httpUrl}/query`, "POST", JSON.stringify(body), bob);
    assert.equal((await nip98Post(relay.httpUrl, "/query", body, bob, header)).status, 200);
    const again = await nip98Post(relay.httpUrl, "/query", body, bob, header);
    assert.equal(again.status, 401);
    assert.deepEqual(again.body, { error: "NIP-98: replay detected" });
  });

  it("answers 401 for missing auth, wrong url, method, payload or time", async () => {
    const body = JSON.stringify([{ kinds: [9] }]);
    const post = async (authorization?: string) => {
      const res = await fetch(`${relay.httpUrl}/query`, { method: "POST", body, headers: authorization ? { authorization } : {} });
      return { status: res.status, body: (await res.json()) as { error: string } };
    };
    const none = await post();
    assert.equal(none.status, 401);
    assert.equal(none.body.error, "missing Nostr auth");
    assert.equal((await post(nip98Header(`${relay.httpUrl}/query/`, "POST", body, bob))).status, 401);
    assert.equal((await post(nip98Header(`${relay.httpUrl}/query`, "GET", body, bob))).status, 401);
    assert.equal((await post(nip98Header(`${relay.httpUrl}/query`, "POST", `${body} `, bob))).status, 401);
    const stale = finalizeEvent(
      {
        kind: 27235,
        created_at: now() - 120,
        content: "",
        tags: [
          ["u", `${relay.httpUrl}/query`],
          ["method", "POST"],
        ],
      },
      bob,
    );
    const r = await post(`Nostr ${Buffer.from(JSON.stringify(stale)).toString("base64")}`);
    assert.equal(r.status, 401);
    assert.match(r.body.error, /^NIP-98: /);
  });

  it("answers 403 to a valid token from someone who is not a relay member", async () => {
    const r = await nip98Post(relay.httpUrl, "/query", [{ kinds: [9] }], stranger);
    assert.equal(r.status, 403);
    assert.equal(typeof r.body.error, "string");
  });

  it("refuses presence over HTTP (WebSocket only) and p-gated queries for someone else", async () => {
    const w = await nip98Post(relay.httpUrl, "/events", sign({ kind: 20001, content: "online" }, alice), alice);
    assert.equal(w.body.accepted, false);
    const q = await nip98Post(relay.httpUrl, "/query", [{ kinds: [44100], "#p": [A] }], bob);
    assert.equal(q.status, 403);
    const own = await nip98Post(relay.httpUrl, "/query", [{ kinds: [44100], "#p": [B] }], bob);
    assert.deepEqual(
      (own.body as Event[]).map((e) => e.tags.find((t) => t[0] === "h")![1]),
      [ch],
    );
  });
});
