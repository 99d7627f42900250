/**
 * The relay's word on itself (docs/protocol.md §7, "What the relay says about itself"): the
 * bridge reads the NIP-11 document at start and after every reconnect, adapts to it (its
 * frame quota, its content limit for splitting replies, its connection lifetime), shows it
 * in `doctor` and `/status`, and survives a relay whose document is missing, malformed or
 * lies: Buzz's defaults, one warning naming what was wrong, and doctor says so.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { parseRelayInfo } from "../src/nostr/nip11.js";
import { client, identity, relayWith } from "./fixtures/relay-helpers.js";
import { captureLogger } from "../kit/queue-helpers.js";
import { CLI, World } from "../kit/world.js";
import { waitFor } from "../kit/wait.js";
import { KIND } from "../src/nostr/kinds.js";

const cleanup: (() => unknown)[] = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

test("a NIP-11 document is read field by field: a limit of 0, a self that is not a key, junk NIPs are named and replaced by defaults", () => {
  const good = parseRelayInfo({
    self: "AB".repeat(32),
    supported_nips: [42, 1, 11, 42],
    limitation: {
      max_message_length: 1000,
      max_content_length: 800,
      max_connection_lifetime_seconds: 30,
      rate_limits: { frames: 20, window_seconds: 5 },
    },
  });
  assert.equal(good.source, "relay");
  assert.equal(good.self, "ab".repeat(32), "a key is taken in lowercase");
  assert.deepEqual(good.supportedNips, [1, 11, 42]);
  assert.equal(good.limits.maxContentLength, 800);
  assert.equal(good.limits.maxConnectionLifetimeMs, 30_000);
  assert.deepEqual(good.limits.frameQuota, { frames: 20, windowMs: 5000 });
  assert.deepEqual(good.problems, []);

  const liar = parseRelayInfo({
    self: "relay-key",
    supported_nips: "all of them",
    limitation: {
      max_message_length: 0,
      max_content_length: -5,
      max_subscriptions: "many",
      max_connection_lifetime_seconds: 0,
      rate_limits: { frames: 0 },
    },
  });
  assert.equal(liar.self, undefined, "a self that is not a key is not trusted");
  assert.equal(liar.limits.maxMessageLength, 512 * 1024, "a limit of 0 falls back to Buzz's default");
  assert.equal(liar.limits.maxContentLength, 256 * 1024);
  assert.equal(liar.limits.maxSubscriptions, 1024);
  assert.equal(liar.limits.maxConnectionLifetimeMs, undefined);
  assert.equal(liar.limits.frameQuota, undefined);
  for (const what of [
    "self",
    "supported_nips",
    "max_message_length",
    "max_content_length",
    "max_subscriptions",
    "max_connection_lifetime_seconds",
    "rate_limits",
  ])
    assert.ok(
      liar.problems.some((p) => p.includes(what)),
      `the problem with ${what} is named: ${liar.problems.join(" | ")}`,
    );

  for (const junk of [null, [], "text", 42]) {
    const r = parseRelayInfo(junk);
    assert.equal(r.source, "defaults");
    assert.equal(r.self, undefined);
    assert.equal(r.problems.length, 1);
  }
});

test("the client reads the dev relay's document (self, limits, lifetime, quota) and again after a reconnect, when the relay rotated its key", async () => {
  const bot = identity();
  const relay = await relayWith([bot], { limits: { frameQuota: { frames: 20, windowMs: 5000 }, maxConnectionLifetimeMs: 60_000 } });
  cleanup.push(() => relay.close());
  const c = client(relay, bot);
  cleanup.push(() => c.stop());
  await c.start();
  assert.equal(await c.waitAuthenticated(10_000), true);
  await waitFor(() => c.info.source === "relay", { what: "the NIP-11 document read" });
  assert.equal(c.info.self, relay.relayPubkey);
  assert.ok(c.info.supportedNips.includes(42));
  assert.equal(c.connectionLifetimeMs, 60_000);
  assert.deepEqual(c.frameQuota, { frames: 20, windowMs: 5000 }, "the relay's stricter quota replaces Buzz's default 50 per 5 s");

  const old = relay.relayPubkey;
  const fresh = await relay.rotateKey(); // cuts every connection, as a restart would
  assert.notEqual(fresh, old);
  await waitFor(() => c.info.self === fresh, { what: "the new self read after the reconnect" });
  assert.ok(c.relayInfo.previousSelves.has(old), "the old key is remembered as stale");
});

test("missing, not JSON, too large, or lying: Buzz's defaults, one warning naming the problem, and the bridge keeps working", async () => {
  const bot = identity();
  const alice = identity();
  const relay = await relayWith([bot, alice]);
  cleanup.push(() => relay.close());
  const ch = await relay.createChannel({ name: "n", members: [bot.pk, alice.pk] });
  const cases: { name: string; set: Parameters<typeof relay.setNip11>[0]; problem: RegExp }[] = [
    { name: "missing", set: { status: 404, raw: "not found" }, problem: /no NIP-11 document .*HTTP 404/ },
    { name: "not JSON", set: { raw: "<html>hello</html>" }, problem: /not JSON/ },
    { name: "too large", set: { raw: `{"name":"${"x".repeat(2 * 1024 * 1024)}"}` }, problem: /(larger|more) than the 1048576/ },
    {
      name: "lying",
      set: { document: { self: "not-a-key", limitation: { max_content_length: 0, max_message_length: 0 } } },
      problem: /self "not-a-key" is not a 64-hex public key.*max_message_length is 0/,
    },
  ];
  for (const k of cases) {
    relay.setNip11(k.set);
    const { logger, lines } = captureLogger();
    const c = client(relay, bot, { logger });
    cleanup.push(() => c.stop());
    await c.start();
    const warning = await waitFor(() => lines.find((l) => l.evt === "relay.nip11_problem"), { what: `the ${k.name} warning` });
    assert.match(String(warning.msg), k.problem, k.name);
    assert.equal(c.info.self, undefined, `${k.name}: no relay key is trusted`);
    assert.equal(c.info.limits.maxContentLength, 256 * 1024, `${k.name}: Buzz's default content limit`);
    assert.equal(c.contentLimit() > 200 * 1024, true);
    // …and it still publishes.
    const { outcome } = await c.send({ kind: KIND.message, created_at: Math.floor(Date.now() / 1000), content: k.name, tags: [["h", ch]] });
    assert.equal(outcome.status, "accepted", k.name);
    assert.equal(lines.filter((l) => l.evt === "relay.nip11_problem").length, 1, `${k.name}: one warning, not one per read`);
    c.stop();
  }
  relay.setNip11(undefined);
});

test("a reply longer than the relay's stated content limit is split at that limit, not at Buzz's 256 KB", async () => {
  const w = await World.create({ relayLimits: { contentBytes: 3000 } });
  cleanup.push(() => w.close());
  await w.startDaemon();
  const asked = await w.owner.post("@agent #final-only #long 7000 split me");
  const parts = await w.waitReplies(asked, 3, 60_000);
  assert.ok(parts.length >= 3, "a 7000-character answer takes at least three parts under a 3000-byte limit");
  for (const p of parts) {
    assert.ok(Buffer.byteLength(p.content) <= 3000, `part within the relay's limit (${Buffer.byteLength(p.content)} bytes)`);
    assert.match(p.content, /^\(\d+\/\d+\) /, "each part is marked");
  }
});

test("doctor shows the relay's key, NIPs and limits, and says so when the document lies; workflows.wake on a relay without a key is a ✗", async () => {
  const w = await World.create();
  cleanup.push(() => w.close());
  const run = (file: string) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const p = spawn(process.execPath, [CLI, "doctor", "-c", file, "--timeout", "30s"], { stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      p.stdout.on("data", (d: Buffer) => (out += d.toString()));
      p.stderr.on("data", (d: Buffer) => (out += d.toString()));
      p.on("exit", (code) => resolve({ code, out }));
    });
  const honest = await run(w.writeConfig({ agent: { warm_spare: false } }, "honest.yaml"));
  assert.match(honest.out, new RegExp(`✓ relay info\\s+NIP-11: key ${w.relay.relayPubkey.slice(0, 12)}`), honest.out);
  assert.match(honest.out, /NIPs: 1, 9, 10, 11, 25, 29, 42, 45, 98/);

  w.relay.setNip11({ document: { self: "nope", limitation: { max_message_length: 0 } } });
  const lying = await run(w.writeConfig({ workflows: { wake: true } }, "lying.yaml"));
  assert.match(lying.out, /✗ relay info\s+workflows\.wake is on, but the relay's NIP-11 document states no signing key/, lying.out);
  assert.match(lying.out, /warning: self "nope" is not a 64-hex public key/);
  assert.match(lying.out, /warning: limitation\.max_message_length is 0, not a positive integer; using 524288/);
  assert.equal(lying.code, 1);
  w.relay.setNip11(undefined);
});
