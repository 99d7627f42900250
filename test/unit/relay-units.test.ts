import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { generateSecretKey, getPublicKey, finalizeEvent, type Event } from "nostr-tools";
import { Backoff, retryAfterMs, reasonPrefix } from "../../src/base/backoff.js";
import { TwoGenerationDedupe } from "../../src/relay/dedupe.js";
import { Coalescer } from "../../src/relay/coalesce.js";
import { channelFilters, isRequested, membershipFilter } from "../../src/nostr/filters.js";
import { authTemplate, httpOrigin, relayTagUrl } from "../../src/relay/auth.js";
import { channelInfoOf } from "../../src/buzz/directory.js";
import { nip98Header } from "../../src/nostr/nip98.js";
import { eventShapeProblem } from "../../src/nostr/validate.js";
import { isRetryable, outcomeFromOk } from "../../src/relay/outcome.js";
import { verifySignature, initCrypto } from "../../src/nostr/verify.js";
import { profileOf } from "../../src/buzz/profiles.js";

const sk = generateSecretKey();
const self = getPublicKey(sk);
const wire = (e: Event): Event => JSON.parse(JSON.stringify(e));

test("backoff doubles from the base to the cap with bounded jitter", () => {
  const b = new Backoff({ baseMs: 1000, capMs: 60_000, jitter: 0.2 });
  const d = Array.from({ length: 10 }, () => b.next());
  assert.ok(d[0]! >= 800 && d[0]! <= 1200);
  assert.ok(d[3]! >= 6400 && d[3]! <= 9600);
  assert.ok(d.every((x) => x <= 60_000));
  assert.ok(d[9]! >= 48_000);
  b.reset();
  assert.ok(b.next() <= 1200);
});

test("backoff without jitter gives exactly base · 2^attempt up to the cap, by count or in sequence", () => {
  const b = new Backoff({ baseMs: 500, capMs: 30_000, jitter: 0 });
  const expected = [500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000];
  assert.deepEqual(
    expected.map((_, i) => b.delayFor(i)),
    expected,
  );
  assert.equal(b.attempts, 0, "delayFor does not count an attempt");
  assert.deepEqual(
    expected.map(() => b.next()),
    expected,
  );
  assert.equal(b.delayFor(1_000), 30_000, "a large count stays at the cap");
  b.reset();
  assert.equal(b.next(), 500);
});

test("retry hints and reason prefixes are read from relay text", () => {
  assert.equal(retryAfterMs("rate-limited: quota exceeded; retry in 7s"), 7000);
  assert.equal(retryAfterMs("rate-limited: too many concurrent requests"), undefined);
  assert.equal(reasonPrefix("auth-required: verification failed"), "auth-required");
  assert.equal(reasonPrefix("plain"), "");
});

test("dedupe remembers ids across one generation and stays bounded", () => {
  const d = new TwoGenerationDedupe(100);
  assert.equal(d.add("a"), true);
  assert.equal(d.add("a"), false);
  for (let i = 0; i < 60; i++) d.add(`x${i}`);
  assert.equal(d.has("a"), true, "still in the old generation");
  for (let i = 0; i < 1000; i++) d.add(`y${i}`);
  assert.ok(d.size <= 100);
  assert.equal(d.has("a"), false);
});

test("500 channels make a few filters: grouped by kinds, mention rule and since", () => {
  const chans = Array.from({ length: 500 }, (_, i) => ({
    id: `c${String(i).padStart(3, "0")}`,
    kinds: i % 100 === 0 ? [9, 45001] : [9],
    requireMention: i % 250 !== 7,
  }));
  const filters = channelFilters(chans, self, () => 1000);
  assert.equal(filters.length, 4);
  const amend = filters.find((f) => f.kinds?.includes(40003))!;
  assert.deepEqual(amend.kinds, [5, 9005, 40003], "edits and deletions: one filter for every channel, no mention rule");
  assert.equal(amend["#h"]!.length, 500);
  assert.equal(amend["#p"], undefined);
  const main = filters.find((f) => f["#h"]!.length > 400)!;
  assert.deepEqual(main.kinds, [9]);
  assert.deepEqual(main["#p"], [self]);
  assert.equal(main.since, 1000);
  const noMention = filters.find((f) => !f["#p"] && f !== amend)!;
  assert.deepEqual(noMention["#h"], ["c007", "c257"]);
  assert.deepEqual(membershipFilter(self, 5), [{ kinds: [44100, 44101], "#p": [self], since: 5 }]);
});

test("only events for requested channels, kinds and mentions count as requested", () => {
  const chans = new Map([
    ["c1", { id: "c1", kinds: [9], requireMention: true }],
    ["c2", { id: "c2", kinds: [9], requireMention: false }],
  ]);
  const ev = (h: string, kind: number, p?: string) => ({ kind, tags: [["h", h], ...(p ? [["p", p]] : [])] }) as Event;
  assert.equal(isRequested(ev("c1", 9, self), chans, self), true);
  assert.equal(isRequested(ev("c1", 9), chans, self), false);
  assert.equal(isRequested(ev("c1", 7, self), chans, self), false);
  assert.equal(isRequested(ev("c2", 9), chans, self), true);
  assert.equal(isRequested(ev("c3", 9, self), chans, self), false);
  assert.equal(isRequested(ev("c1", 40003), chans, self), true, "an edit names no one: requested in a listened channel");
  assert.equal(isRequested(ev("c1", 5), chans, self), true, "so does a deletion");
  assert.equal(isRequested(ev("c3", 5), chans, self), false);
});

test("relay tag and HTTP origin drop the trailing slash and path", () => {
  assert.equal(relayTagUrl("wss://buzz.example.com/"), "wss://buzz.example.com");
  assert.equal(relayTagUrl("ws://127.0.0.1:7777/"), "ws://127.0.0.1:7777");
  assert.equal(httpOrigin("wss://buzz.example.com/"), "https://buzz.example.com");
  assert.equal(httpOrigin("ws://127.0.0.1:7777"), "http://127.0.0.1:7777");
  const tpl = authTemplate("ws://127.0.0.1:7777/", "abc");
  assert.deepEqual(
    tpl.tags.find((t) => t[0] === "relay"),
    ["relay", "ws://127.0.0.1:7777"],
  );
  assert.deepEqual(
    tpl.tags.find((t) => t[0] === "challenge"),
    ["challenge", "abc"],
  );
  assert.equal(tpl.kind, 22242);
  assert.throws(() => relayTagUrl("http://x"), /must start with ws/);
});

test("channel type rule follows buzz-acp", () => {
  const meta = (tags: string[][]) => ({ kind: 39000, tags: [["d", "x"], ["name", "n"], ["about", "a"], ...tags] }) as Event;
  assert.equal(channelInfoOf("x", meta([["t", "dm"]])).type, "dm");
  assert.equal(channelInfoOf("x", meta([["hidden"]])).type, "dm");
  assert.equal(channelInfoOf("x", meta([["t", "private"]])).type, "private");
  assert.equal(channelInfoOf("x", meta([["private"]])).type, "private");
  assert.equal(channelInfoOf("x", meta([])).type, "stream");
  assert.equal(channelInfoOf("x", meta([["archived", "true"]])).archived, true);
  assert.deepEqual(channelInfoOf("x", undefined), {
    id: "x",
    name: "unknown",
    about: "",
    type: "unknown",
    archived: false,
    members: undefined,
  });
  assert.equal(channelInfoOf("x", meta([])).about, "a");
});

test("NIP-98 header: nonce, method, url and sha256 of the exact body bytes; fresh per call", () => {
  const body = Buffer.from('[{"kinds":[9]}]');
  const h1 = nip98Header("http://127.0.0.1:1/query", "post", body, sk);
  const h2 = nip98Header("http://127.0.0.1:1/query", "post", body, sk);
  const ev = JSON.parse(Buffer.from(h1.replace(/^Nostr /, ""), "base64").toString()) as Event;
  const tag = (n: string) => ev.tags.find((t) => t[0] === n)?.[1];
  assert.equal(ev.kind, 27235);
  assert.equal(tag("u"), "http://127.0.0.1:1/query");
  assert.equal(tag("method"), "POST");
  assert.equal(tag("payload"), createHash("sha256").update(body).digest("hex"));
  assert.match(tag("nonce")!, /^[0-9a-f-]{36}$/);
  assert.notEqual(h1, h2, "two identical bodies get different events");
  assert.equal(verifySignature(ev), true);
});

test("event shape check rejects garbage and ids that do not match content", async () => {
  await initCrypto();
  const ev = wire(finalizeEvent({ kind: 9, created_at: 1, tags: [["h", "c"]], content: "hi" }, sk));
  assert.equal(eventShapeProblem(ev), undefined);
  assert.equal(eventShapeProblem({ ...ev, content: "tampered" }), "id does not match content");
  assert.equal(eventShapeProblem("x"), "not an object");
  assert.equal(eventShapeProblem({ ...ev, tags: [[1]] }), "bad tags");
  const badSig = { ...ev, sig: ev.sig.replace(/^./, (c) => (c === "0" ? "1" : "0")) };
  assert.equal(eventShapeProblem(badSig), undefined, "a bad signature is only found by verify");
  assert.equal(verifySignature(badSig), false);
  assert.equal(verifySignature(ev), true);
});

test("publish outcomes: duplicate is success, only later-succeeding refusals are retryable", () => {
  assert.equal(outcomeFromOk(true, "").status, "accepted");
  assert.equal(outcomeFromOk(true, "duplicate: already have it").status, "duplicate");
  assert.equal(outcomeFromOk(false, "restricted: not a member").status, "refused");
  assert.equal(isRetryable(outcomeFromOk(false, "rate-limited: retry in 1s")), true);
  assert.equal(isRetryable(outcomeFromOk(false, "restricted: not a member")), false);
  assert.equal(isRetryable({ status: "timeout" }), true);
  assert.equal(isRetryable({ status: "disconnected" }), true);
});

test("profile display name falls back from display_name to name to short npub", () => {
  const p = (content: string) => ({ kind: 0, content, tags: [] }) as unknown as Event;
  assert.equal(profileOf(self, p('{"display_name":"Ada","name":"ada"}')).displayName, "Ada");
  assert.equal(profileOf(self, p('{"name":"ada"}')).displayName, "ada");
  assert.match(profileOf(self, p("not json")).displayName, /^npub1/);
  assert.match(profileOf(self, undefined).displayName, /^npub1.*…/);
});

test("the coalescer: a burst goes out once it is quiet, a steady trickle at the latest every maxMs (mock timers: exact)", (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const flushes: number[] = [];
  let now = 0;
  const c = new Coalescer(() => flushes.push(now), { quietMs: 300, maxMs: 1000 });
  const advance = (ms: number) => {
    for (let i = 0; i < ms; i++) {
      now++;
      t.mock.timers.tick(1);
    }
  };
  const since = (from: number) => flushes.filter((at) => at >= from).map((at) => at - from);
  // 20 changes 10 ms apart, then quiet: one frame, 300 ms after the last.
  let from = now;
  for (let i = 0; i < 20; i++) {
    c.touch();
    advance(10);
  }
  assert.ok(c.pending);
  advance(400);
  assert.deepEqual(since(from), [190 + 300], "once the burst was quiet for 300 ms");
  assert.ok(!c.pending);
  // 100 changes 8 ms apart (about 0.8 s), never quiet for 300 ms: one frame, at the deadline 1 s after the first.
  from = now;
  for (let i = 0; i < 100; i++) {
    c.touch();
    advance(8);
  }
  advance(400);
  assert.deepEqual(since(from), [1000], "one flush for the whole burst");
  // A change every 200 ms for 2.5 s: never quiet, so the deadline sends one at most every 1000 ms.
  from = now;
  for (let i = 0; i < 13; i++) {
    c.touch();
    advance(200);
  }
  advance(400);
  assert.deepEqual(since(from), [1000, 2000, 2700]);
  // Nothing pending: no flush, and flush() without a change does nothing.
  const count = flushes.length;
  advance(3000);
  c.flush();
  assert.equal(flushes.length, count);
  // A pending change can be sent at once, or dropped.
  c.touch();
  c.flush();
  assert.equal(flushes.length, count + 1);
  c.touch();
  c.cancel();
  advance(3000);
  assert.equal(flushes.length, count + 1);
});
