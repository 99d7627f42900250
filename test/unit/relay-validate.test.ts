/**
 * One NIP-01 shape for both ends: the bridge's check of what a relay sends and the dev
 * relay's check of what a client publishes share nostr/validate.ts, so they agree on the
 * kind range 0..65535 (docs/protocol.md §4) and on every other field.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { generateSecretKey, getEventHash, getPublicKey, type Event } from "nostr-tools";
import { eventHash, eventShapeFault, eventShapeProblem, KIND_MAX } from "../../src/nostr/validate.js";
import { shapeReason } from "../../src/devrelay/rules.js";
import { startDevRelay, type DevRelay } from "../../src/devrelay/index.js";
import { RawClient, sign } from "../../kit/raw-client.js";

const sk = generateSecretKey();
const wire = (ev: Event): Event => JSON.parse(JSON.stringify(ev));

let relay: DevRelay;
before(async () => {
  relay = await startDevRelay();
  await relay.createChannel({ name: "general", members: [getPublicKey(sk)] });
});
after(async () => {
  await relay.close();
});

test("the kind bound is 65535 on the bridge's side and the dev relay's", () => {
  assert.equal(KIND_MAX, 65_535);
  for (const kind of [0, 9, 65_535]) {
    const ev = wire(sign({ kind, tags: [], content: "in range" }, sk));
    assert.equal(eventShapeProblem(ev), undefined, `kind ${kind}`);
    assert.equal(shapeReason(ev), null, `kind ${kind}`);
  }
  for (const kind of [65_536, -1, 1.5, 2 ** 53]) {
    const ev = { ...wire(sign({ kind: 9, tags: [], content: "out of range" }, sk)), kind };
    assert.equal(eventShapeFault(ev), "kind", `kind ${kind}`);
    assert.equal(eventShapeProblem(ev), "bad kind", `kind ${kind}`);
    assert.equal(shapeReason(ev), "invalid: kind must be an integer 0..65535", `kind ${kind}`);
  }
});

test("the dev relay takes kind 65535 and refuses 65536 with its reason", async () => {
  const c = await RawClient.authed(relay.url, sk);
  try {
    const top = sign({ kind: 65_535, tags: [], content: "highest kind" }, sk);
    assert.deepEqual((await c.publish(top)).slice(2), [true, ""]);
    const over = sign({ kind: 65_536, tags: [], content: "one past" }, sk);
    assert.deepEqual((await c.publish(over)).slice(2), [false, "invalid: kind must be an integer 0..65535"]);
  } finally {
    await c.close();
  }
});

test("the other fields: both sides find the same fault first", () => {
  const ev = wire(sign({ kind: 9, tags: [["h", "c"]], content: "hi" }, sk));
  const cases: [Record<string, unknown>, string, string][] = [
    [{ ...ev, id: ev.id.toUpperCase() }, "id", "bad id"],
    [{ ...ev, pubkey: getPublicKey(sk).slice(1) }, "pubkey", "bad pubkey"],
    [{ ...ev, sig: "00" }, "sig", "bad sig field"],
    [{ ...ev, created_at: -1 }, "created_at", "bad created_at"],
    [{ ...ev, content: 1 }, "content", "bad content"],
    [{ ...ev, tags: [["h", 1]] }, "tags", "bad tags"],
  ];
  for (const [bad, fault, problem] of cases) {
    assert.equal(eventShapeFault(bad), fault);
    assert.match(shapeReason(bad) ?? "", new RegExp(`^invalid: ${fault} must be `));
    assert.equal(eventShapeProblem(bad), problem);
  }
  assert.equal(eventShapeFault([ev]), "object");
});

test("an event's id is NIP-01's hash of it, as nostr-tools computes it: multi-byte content, escapes and tags included", () => {
  const contents = ["plain", "über 🐝 — 日本語", 'quotes " and \\ and\nnewlines\tand \u0001', ""];
  for (const content of contents) {
    const tags = [
      ["h", "général"],
      ["e", "a".repeat(64), "", "reply"],
    ];
    const ev = wire(sign({ kind: 9, tags, content }, sk));
    assert.equal(eventHash(ev), getEventHash(ev), JSON.stringify(content));
    assert.equal(eventShapeProblem(ev), undefined, JSON.stringify(content));
    const altered = { ...ev, content: `${content}!` };
    assert.equal(eventShapeProblem(altered), "id does not match content", JSON.stringify(content));
  }
});
