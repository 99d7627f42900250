/** Bad input gets a NIP-01 answer with a reason; the relay keeps running and stores nothing bad. */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { generateSecretKey, getPublicKey, type Event } from "nostr-tools";
import { startDevRelay, type DevRelay } from "../../src/devrelay/index.js";
import { RawClient, sign, now } from "../../kit/raw-client.js";

describe("dev relay bad input and limits", () => {
  let relay: DevRelay;
  const alice = generateSecretKey();
  const A = getPublicKey(alice);
  let ch: string;
  const clients: RawClient[] = [];
  const authed = async () => {
    const c = await RawClient.authed(relay.url, alice);
    clients.push(c);
    return c;
  };
  const notStored = async (c: RawClient, id: string) => {
    const { events } = await c.req(`chk-${id.slice(0, 8)}`, { ids: [id] });
    assert.deepEqual(events, [], "a refused event must not be stored");
  };

  before(async () => {
    relay = await startDevRelay();
    ch = await relay.createChannel({ name: "general", members: [A] });
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await relay.close();
  });

  it("answers invalid JSON, non-array and unknown message types with NOTICE", async () => {
    const c = await authed();
    c.send("{not json");
    assert.match(String((await c.next((f) => f[0] === "NOTICE"))[1]), /^invalid: .*JSON/);
    c.send(JSON.stringify({ type: "REQ" }));
    assert.match(String((await c.next((f) => f[0] === "NOTICE"))[1]), /^invalid: /);
    c.send(["HELLO", 1]);
    assert.match(String((await c.next((f) => f[0] === "NOTICE"))[1]), /^invalid: unknown message type/);
    c.send(["EVENT", "not an event"]);
    assert.match(String((await c.next((f) => f[0] === "NOTICE"))[1]), /^invalid: /);
    c.send(["REQ", "bad", "not a filter"]);
    assert.match(String((await c.next((f) => f[0] === "CLOSED" && f[1] === "bad"))[2]), /^invalid: /);
    c.send(["REQ", ""]);
    assert.match(String((await c.next((f) => f[0] === "NOTICE"))[1]), /^invalid: /);
    assert.equal((await c.publish(sign({ kind: 9, tags: [["h", ch]], content: "still alive" }, alice)))[2], true);
  });

  it("refuses a wrong id and a bad signature", async () => {
    const c = await authed();
    const good = sign({ kind: 9, tags: [["h", ch]], content: "original" }, alice);
    const tampered = { ...JSON.parse(JSON.stringify(good)), content: "tampered" } as Event;
    assert.deepEqual((await c.publish(tampered)).slice(2), [false, "invalid: id is wrong"]);
    const forged = { ...JSON.parse(JSON.stringify(good)), sig: "ab".repeat(64) } as Event;
    assert.deepEqual((await c.publish(forged)).slice(2), [false, "invalid: signature is wrong"]);
    await notStored(c, good.id);
    const malformed = { ...JSON.parse(JSON.stringify(good)), kind: "nine" };
    assert.match(String((await c.publish(malformed as Event))[3]), /^invalid: kind/);
  });

  it("refuses content over 256 KB and created_at beyond ±15 minutes", async () => {
    const c = await authed();
    const big = sign({ kind: 9, tags: [["h", ch]], content: "x".repeat(256 * 1024 + 1) }, alice);
    assert.match(String((await c.publish(big))[3]), /^invalid: content too large/);
    await notStored(c, big.id);
    const old = sign({ kind: 9, created_at: now() - 16 * 60, tags: [["h", ch]] }, alice);
    assert.match(String((await c.publish(old))[3]), /^invalid: created_at/);
    const future = sign({ kind: 9, created_at: now() + 16 * 60, tags: [["h", ch]] }, alice);
    assert.match(String((await c.publish(future))[3]), /^invalid: created_at/);
    await notStored(c, old.id);
  });

  it("answers a frame over 512 KiB with a NOTICE and closes the socket", async () => {
    const c = await authed();
    c.send(["EVENT", { content: "y".repeat(520 * 1024) }]);
    assert.match(String((await c.next((f) => f[0] === "NOTICE"))[1]), /^error: frame too large/);
    await new Promise<void>((resolve) => (c.closed ? resolve() : c.ws.once("close", () => resolve())));
    const again = await authed();
    assert.equal((await again.publish(sign({ kind: 9, tags: [["h", ch]] }, alice)))[2], true);
  });

  it("answers a duplicate as accepted with a duplicate: message", async () => {
    const c = await authed();
    const ev = sign({ kind: 9, tags: [["h", ch]], content: "once" }, alice);
    assert.deepEqual((await c.publish(ev)).slice(2), [true, ""]);
    const dup = await c.publish(ev);
    assert.equal(dup[2], true);
    assert.match(String(dup[3]), /^duplicate:/);
  });

  it("swallows OKs while asked to, and answers again afterwards", async () => {
    const c = await authed();
    relay.setSwallowOk(true);
    await assert.rejects(c.publish(sign({ kind: 9, tags: [["h", ch]], content: "lost ack" }, alice), 300));
    relay.setSwallowOk(false);
    assert.equal((await c.publish(sign({ kind: 9, tags: [["h", ch]], content: "acked" }, alice)))[2], true);
  });
});

describe("dev relay rate limit", () => {
  let relay: DevRelay;
  const alice = generateSecretKey();
  let c: RawClient;

  before(async () => {
    relay = await startDevRelay({ limits: { frameQuota: { frames: 3, windowMs: 60_000 } } });
    await relay.createChannel({ name: "general", members: [getPublicKey(alice)] });
    c = await RawClient.authed(relay.url, alice);
  });
  after(async () => {
    await c.close();
    await relay.close();
  });

  it("answers an over-quota REQ with CLOSED and refuses an over-quota EVENT with OK false, in Buzz's format", async () => {
    for (let i = 0; i < 3; i++) assert.equal((await c.req(`s${i}`, { kinds: [1] })).closed, undefined);
    const r = await c.req("over", { kinds: [1] });
    assert.match(r.closed ?? "", /^rate-limited: quota exceeded; retry in \d+s$/);
    const stored = relay.stats().events;
    const ev = sign({ kind: 1, content: "x" }, alice);
    c.send(["EVENT", ev]);
    const answer = await c.next((f) => f[0] === "NOTICE" || (f[0] === "OK" && f[1] === ev.id));
    assert.deepEqual(answer.slice(0, 3), ["OK", ev.id, false], "the EVENT is refused by its own OK, not a NOTICE");
    assert.match(String(answer[3]), /^rate-limited: quota exceeded; retry in \d+s$/);
    assert.equal(relay.stats().events, stored, "the refused event was not stored");
  });
});
