/** Channel scoping, NIP-29 state, membership notices, p-gating, reactions and storage rules. */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { generateSecretKey, getPublicKey, type Event } from "nostr-tools";
import { startDevRelay, type DevRelay } from "../../src/devrelay/index.js";
import { RawClient, sign, now } from "../../kit/raw-client.js";
import { sleep } from "../../kit/wait.js";

const tagOf = (ev: Event, name: string) => ev.tags.find((t) => t[0] === name)?.[1];
/** Time for a frame that must NOT arrive to arrive: the checks after it are that nothing came. */
const QUIET_MS = 100;

describe("dev relay channels", () => {
  let relay: DevRelay;
  const [alice, bob, carol] = [generateSecretKey(), generateSecretKey(), generateSecretKey()];
  const [A, B, C] = [alice, bob, carol].map((k) => getPublicKey(k)) as [string, string, string];
  let chA: string;
  let chB: string;
  let priv: string;
  const clients: RawClient[] = [];
  const as = async (sk: Uint8Array) => {
    const c = await RawClient.authed(relay.url, sk);
    clients.push(c);
    return c;
  };

  before(async () => {
    relay = await startDevRelay({
      seed: {
        members: [C],
        channels: [
          { name: "alpha", about: "the A room", type: "stream", members: [A, B], messages: [] },
          { name: "beta", type: "stream", members: [A, B], messages: [] },
          { name: "secret", about: "hush", type: "private", members: [A], messages: [] },
        ],
      },
    });
    [chA, chB, priv] = relay.seeded.map((c) => c.id) as [string, string, string];
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await relay.close();
  });

  it("a #h subscriber of channel A never receives channel B", async () => {
    const bobC = await as(bob);
    const aliceC = await as(alice);
    await bobC.req("a-only", { kinds: [9], "#h": [chA] });
    await bobC.req("all", { kinds: [9] });
    const inB = sign({ kind: 9, tags: [["h", chB]], content: "in B" }, alice);
    const inA = sign({ kind: 9, tags: [["h", chA]], content: "in A" }, alice);
    assert.equal((await aliceC.publish(inB))[2], true);
    assert.equal((await aliceC.publish(inA))[2], true);
    const got = await bobC.next((f) => f[0] === "EVENT" && f[1] === "a-only");
    assert.equal((got[2] as Event).id, inA.id);
    await sleep(QUIET_MS);
    assert.deepEqual(
      bobC.drain("a-only").map((e) => e.id),
      [],
    );
    assert.deepEqual(new Set(bobC.drain("all").map((e) => e.id)), new Set([inA.id, inB.id]));
  });

  it("a non-member can neither read nor write a private channel", async () => {
    const aliceC = await as(alice);
    const bobC = await as(bob);
    await bobC.req("spy", { "#h": [priv] });
    await bobC.req("wide", { kinds: [9] });
    const secret = sign({ kind: 9, tags: [["h", priv]], content: "secret" }, alice);
    assert.equal((await aliceC.publish(secret))[2], true);
    const write = await bobC.publish(sign({ kind: 9, tags: [["h", priv]], content: "let me in" }, bob));
    assert.deepEqual(write.slice(2), [false, "restricted: not a channel member"]);
    await sleep(QUIET_MS);
    assert.deepEqual(
      [...bobC.drain("spy"), ...bobC.drain("wide")].filter((e) => tagOf(e, "h") === priv),
      [],
    );
    const history = await bobC.req("hist", { "#h": [priv] }, { ids: [secret.id] });
    assert.deepEqual(history.events, []);
    const meta = await bobC.req("meta", { kinds: [39000, 39002], "#d": [priv] });
    assert.deepEqual(meta.events, []);
  });

  it("refuses channel kinds without h, unknown channels and someone else's pubkey", async () => {
    const aliceC = await as(alice);
    assert.match(String((await aliceC.publish(sign({ kind: 9, content: "x" }, alice)))[3]), /^invalid: kind 9 needs an h tag/);
    assert.match(String((await aliceC.publish(sign({ kind: 9, tags: [["h", "nope"]] }, alice)))[3]), /^restricted: unknown channel/);
    const asBob = await aliceC.publish(sign({ kind: 9, tags: [["h", chA]] }, bob));
    assert.deepEqual(asBob.slice(2), [false, "restricted: event pubkey is not the authenticated key"]);
    assert.match(
      String((await aliceC.publish(sign({ kind: 39000, tags: [["d", chA]] }, alice)))[3]),
      /^restricted: kind 39000 is written by the relay only/,
    );
  });

  it("serves relay-signed 39000/39002, and 39002 by #p self lists my channels", async () => {
    const aliceC = await as(alice);
    const { events } = await aliceC.req("mine", { kinds: [39002], "#p": [A] });
    assert.deepEqual(new Set(events.map((e) => tagOf(e, "d"))), new Set([chA, chB, priv]));
    for (const e of events) assert.equal(e.pubkey, relay.relayPubkey);
    const members = events.find((e) => tagOf(e, "d") === chA)!;
    assert.deepEqual(
      members.tags.filter((t) => t[0] === "p"),
      [
        ["p", A, "", "member"],
        ["p", B, "", "member"],
      ],
    );
    const meta = await aliceC.req("meta", { kinds: [39000], "#d": [chA, priv] });
    const a = meta.events.find((e) => tagOf(e, "d") === chA)!;
    assert.equal(tagOf(a, "name"), "alpha");
    assert.equal(tagOf(a, "about"), "the A room");
    assert.equal(tagOf(a, "t"), "stream");
    const p = meta.events.find((e) => tagOf(e, "d") === priv)!;
    assert.equal(tagOf(p, "t"), "private");
    assert.ok(p.tags.some((t) => t[0] === "private" && t.length === 1));
  });

  it("membership change emits 44100 only to the member's #p subscription, then 44101 on removal", async () => {
    const carolC = await as(carol);
    const bobC = await as(bob);
    await carolC.req("membership", { kinds: [44100, 44101], "#p": [C] });
    await carolC.req("no-p", { kinds: [9] });
    await bobC.req("watch-bob", { kinds: [44100, 44101], "#p": [B] });
    await bobC.req("bob-all", {});
    await relay.addMember(chA, C);
    const added = (await carolC.next((f) => f[0] === "EVENT" && f[1] === "membership"))[2] as Event;
    assert.equal(added.kind, 44100);
    assert.equal(added.pubkey, relay.relayPubkey);
    assert.equal(tagOf(added, "p"), C);
    assert.equal(tagOf(added, "h"), chA);
    // bob sees the updated member list of the channel he is in, but never carol's notice
    const list = (await bobC.next((f) => f[0] === "EVENT" && f[1] === "bob-all" && (f[2] as Event).kind === 39002))[2] as Event;
    assert.ok(list.tags.some((t) => t[0] === "p" && t[1] === C));
    await sleep(QUIET_MS);
    assert.deepEqual(carolC.drain("no-p"), []);
    assert.deepEqual(bobC.drain("watch-bob"), []);
    assert.deepEqual(
      bobC.drain("bob-all").filter((e) => e.kind === 44100),
      [],
    );
    // carol can now write into the channel
    assert.equal((await carolC.publish(sign({ kind: 9, tags: [["h", chA]], content: "hi" }, carol)))[2], true);
    await relay.removeMember(chA, C);
    const removed = (await carolC.next((f) => f[0] === "EVENT" && f[1] === "membership"))[2] as Event;
    assert.equal(removed.kind, 44101);
    const refused = await carolC.publish(sign({ kind: 9, tags: [["h", chA]], content: "still here?" }, carol));
    assert.deepEqual(refused.slice(2), [false, "restricted: not a channel member"]);
  });

  it("refuses a REQ for p-gated kinds without #p equal to the authenticated key", async () => {
    const bobC = await as(bob);
    const r = await bobC.req("peek", { kinds: [44100], "#p": [A] });
    assert.match(r.closed ?? "", /^restricted: /);
    const r2 = await bobC.req("peek2", { kinds: [24200] });
    assert.match(r2.closed ?? "", /^restricted: /);
  });

  it("delivers 24200 only to the addressee's #p subscription", async () => {
    const aliceC = await as(alice);
    const bobC = await as(bob);
    await aliceC.req("obs", { kinds: [24200], "#p": [A] });
    await bobC.req("bob-any", {});
    const frame = sign({ kind: 24200, tags: [["p", A]], content: "cipher" }, bob);
    assert.equal((await bobC.publish(frame))[2], true);
    assert.equal(((await aliceC.next((f) => f[1] === "obs" && f[0] === "EVENT"))[2] as Event).id, frame.id);
    await sleep(QUIET_MS);
    assert.deepEqual(
      bobC.drain("bob-any").filter((e) => e.kind === 24200),
      [],
    );
  });

  it("accepts a reaction in a channel the author belongs to and delivers it to that channel's members", async () => {
    const aliceC = await as(alice);
    const bobC = await as(bob);
    const carolC = await as(carol);
    const msg = sign({ kind: 9, tags: [["h", chA]], content: "react to me" }, alice);
    assert.equal((await aliceC.publish(msg))[2], true);
    await bobC.req("reacts", { kinds: [7], "#e": [msg.id] });
    await carolC.req("reacts", { kinds: [7] });
    const r = sign(
      {
        kind: 7,
        tags: [
          ["e", msg.id],
          ["p", A],
        ],
        content: "👀",
      },
      bob,
    );
    assert.deepEqual((await bobC.publish(r)).slice(2), [true, ""]);
    assert.equal(((await bobC.next((f) => f[1] === "reacts" && f[0] === "EVENT"))[2] as Event).id, r.id);
    const intruder = await carolC.publish(sign({ kind: 7, tags: [["e", msg.id]], content: "+" }, carol));
    assert.deepEqual(intruder.slice(2), [false, "restricted: not a channel member"]);
    await sleep(QUIET_MS);
    assert.deepEqual(carolC.drain("reacts"), []);
    const missing = await bobC.publish(sign({ kind: 7, tags: [["e", "0".repeat(64)]], content: "+" }, bob));
    assert.equal(missing[2], false);
  });

  it("delivers ephemeral events live and never stores them", async () => {
    const aliceC = await as(alice);
    const bobC = await as(bob);
    await bobC.req("typing", { kinds: [20002], "#h": [chA] });
    const typing = sign({ kind: 20002, tags: [["h", chA]] }, alice);
    assert.equal((await aliceC.publish(typing))[2], true);
    assert.equal(((await bobC.next((f) => f[1] === "typing" && f[0] === "EVENT"))[2] as Event).id, typing.id);
    const stored = await bobC.req("typing-hist", { kinds: [20002] });
    assert.deepEqual(stored.events, []);
  });

  it("keeps only the newest replaceable event", async () => {
    const aliceC = await as(alice);
    const old = sign({ kind: 0, created_at: now() - 10, content: '{"name":"old"}' }, alice);
    const fresh = sign({ kind: 0, created_at: now() - 5, content: '{"name":"new"}' }, alice);
    assert.equal((await aliceC.publish(fresh))[2], true);
    const late = await aliceC.publish(old);
    assert.equal(late[2], true);
    assert.match(String(late[3]), /^duplicate:/);
    const { events } = await aliceC.req("profile", { kinds: [0], authors: [A] });
    assert.deepEqual(
      events.map((e) => e.content),
      ['{"name":"new"}'],
    );
  });

  it("stored history honours since, until and limit, newest first, across several filters", async () => {
    const aliceC = await as(alice);
    const t0 = now() - 100;
    const evs = [0, 1, 2, 3, 4].map((i) =>
      sign(
        {
          kind: 9,
          created_at: t0 + i * 10,
          tags: [
            ["h", chB],
            ["t", "hist"],
          ],
          content: `m${i}`,
        },
        alice,
      ),
    );
    for (const e of evs) assert.equal((await aliceC.publish(e))[2], true);
    const base = { kinds: [9], "#t": ["hist"] };
    const since = await aliceC.req("since", { ...base, since: t0 + 20 });
    assert.deepEqual(
      since.events.map((e) => e.content),
      ["m4", "m3", "m2"],
    );
    const until = await aliceC.req("until", { ...base, until: t0 + 10 });
    assert.deepEqual(
      until.events.map((e) => e.content),
      ["m1", "m0"],
    );
    const limit = await aliceC.req("limit", { ...base, limit: 2 });
    assert.deepEqual(
      limit.events.map((e) => e.content),
      ["m4", "m3"],
    );
    const two = await aliceC.req("two", { ...base, until: t0 }, { ...base, since: t0 + 40 }, { ids: [evs[4]!.id] });
    assert.deepEqual(
      two.events.map((e) => e.content),
      ["m0", "m4"],
    );
    const none = await aliceC.req("none", { kinds: [], "#h": [chB] });
    assert.deepEqual(none.events, []);
  });

  it("deletes an author's own event on kind 5 / 9005, not someone else's", async () => {
    const aliceC = await as(alice);
    const bobC = await as(bob);
    const mine = sign({ kind: 9, tags: [["h", chA]], content: "oops" }, alice);
    const other = sign({ kind: 9, tags: [["h", chA]], content: "bob's" }, bob);
    await aliceC.publish(mine);
    await bobC.publish(other);
    assert.equal((await aliceC.publish(sign({ kind: 5, tags: [["h", chA]] }, alice)))[2], true);
    assert.equal(
      (
        await aliceC.publish(
          sign(
            {
              kind: 9005,
              tags: [
                ["h", chA],
                ["e", mine.id],
                ["e", other.id],
              ],
            },
            alice,
          ),
        )
      )[2],
      true,
    );
    const { events } = await bobC.req("gone", { ids: [mine.id, other.id] });
    assert.deepEqual(
      events.map((e) => e.id),
      [other.id],
    );
  });

  it("replaces a subscription with the same id and stops delivering after CLOSE", async () => {
    const aliceC = await as(alice);
    const bobC = await as(bob);
    await bobC.req("s", { kinds: [9], "#h": [chA] });
    await bobC.req("s", { kinds: [9], "#h": [chB] });
    const inA = sign({ kind: 9, tags: [["h", chA]], content: "a" }, alice);
    const inB = sign({ kind: 9, tags: [["h", chB]], content: "b" }, alice);
    await aliceC.publish(inA);
    await aliceC.publish(inB);
    assert.equal(((await bobC.next((f) => f[1] === "s" && f[0] === "EVENT"))[2] as Event).id, inB.id);
    bobC.send(["CLOSE", "s"]);
    await sleep(QUIET_MS);
    await aliceC.publish(sign({ kind: 9, tags: [["h", chB]], content: "after close" }, alice));
    await sleep(QUIET_MS);
    assert.deepEqual(bobC.drain("s"), []);
  });
});
