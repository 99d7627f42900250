import { test, after } from "node:test";
import assert from "node:assert/strict";
import { client, collector, identity, mention, relayWith } from "../fixtures/relay-helpers.js";
import { presence, typing } from "../../src/nostr/events.js";
import { Publisher } from "../../src/relay/publisher.js";
import { silentLogger } from "../../src/base/log.js";

const bridge = identity();
const alice = identity();
const cleanup: (() => unknown)[] = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

test("publish outcomes: accepted, duplicate, refused with the relay's reason, timeout, disconnected", async () => {
  const relay = await relayWith([bridge, alice]);
  cleanup.push(() => relay.close());
  const mine = await relay.createChannel({ name: "mine", members: [bridge.pk] });
  const theirs = await relay.createChannel({ name: "theirs", members: [alice.pk] });
  const bot = client(relay, bridge);
  cleanup.push(() => bot.stop());
  await bot.start();
  assert.equal(await bot.waitAuthenticated(10_000), true);

  const ev = bot.sign(mention(mine, alice.pk, "hello"));
  assert.equal((await bot.publish(ev)).status, "accepted");
  assert.equal((await bot.publish(ev)).status, "duplicate", "the same signed event again is a duplicate, not an error");

  const refused = await bot.publish(bot.sign(mention(theirs, alice.pk, "not my channel")));
  assert.equal(refused.status, "refused");
  assert.match(refused.reason ?? "", /^restricted:/);
  assert.equal(refused.attempts, 1, "a refusal that cannot succeed later is not retried");

  relay.setSwallowOk(true);
  const silent = await bot.publish(bot.sign(mention(mine, alice.pk, "into the void")), { attempts: 2, timeoutMs: 200 });
  assert.equal(silent.status, "timeout");
  assert.equal(silent.attempts, 2, "a timeout is retried with the same event");
  relay.setSwallowOk(false);

  bot.stop();
  const gone = await bot.publish(bot.sign(mention(mine, alice.pk, "after stop")), { attempts: 1 });
  assert.equal(gone.status, "disconnected");
});

test("a rate-limit reply delays further publishes and they then succeed; typing is dropped meanwhile", async () => {
  // 4 frames per 1.5 s: the two REQs at start plus a burst of publishes overrun it. The bot does
  // not read the relay's NIP-11, so its budget knows nothing of that quota and the relay refuses.
  const relay = await relayWith([bridge, alice], { limits: { frameQuota: { frames: 4, windowMs: 1500 } } });
  cleanup.push(() => relay.close());
  const ch = await relay.createChannel({ name: "busy", members: [bridge.pk, alice.pk] });
  const bot = client(relay, bridge, { readRelayInfo: false });
  const watcher = client(relay, alice);
  cleanup.push(
    () => bot.stop(),
    () => watcher.stop(),
  );
  const got = collector(watcher);
  watcher.setChannels([{ id: ch, kinds: [9], requireMention: true }]);
  await watcher.start();
  await bot.start();
  assert.equal(await watcher.waitSubscribed(10_000), true);
  assert.equal(await bot.waitAuthenticated(10_000), true);

  const results = [];
  for (let i = 0; i < 6; i++) results.push(await bot.send(mention(ch, alice.pk, `burst ${i}`), { attempts: 5 }));
  assert.deepEqual(
    results.map((r) => r.outcome.status),
    Array(6).fill("accepted"),
  );
  assert.ok(bot.metrics.rateLimited >= 1, "the relay did rate-limit us");
  assert.ok(
    results.some((r) => (r.outcome.rateLimited ?? 0) > 0),
    "a publish refused with OK false rate-limited: was re-sent after the pause",
  );
  assert.ok(
    results.every((r) => r.outcome.attempts === 1),
    "a rate-limited refusal does not use up an attempt",
  );
  assert.equal(await got.until(6), true, "all six arrived");

  // While limited, a typing indicator is dropped rather than queued: burn the quota with typing
  // (never retried) until the relay limits us, then the next one is not even sent.
  let limited = false;
  for (let i = 0; i < 20 && !limited; i++) limited = (await bot.send(typing(ch))).outcome.status === "refused";
  assert.equal(limited, true, "the relay limited the typing burst");
  const framesBefore = bot.metrics.eventFrames;
  const dropped = await bot.send(typing(ch));
  assert.equal(dropped.outcome.status, "dropped");
  const away = await bot.send(presence("online"));
  assert.equal(away.outcome.status, "dropped", "presence is telemetry too: dropped, not queued");
  assert.equal(bot.metrics.eventFrames, framesBefore, "nothing was sent");

  // A subscription change made while limited is held back, then goes through.
  bot.setChannels([{ id: ch, kinds: [9], requireMention: false }]);
  assert.equal(await bot.waitSubscribed(15_000), true, "the deferred REQ was sent and acknowledged");
});

test("a publish whose OK was lost is confirmed with the relay by id: stored counts as published, not stored stays a timeout", async () => {
  const relay = await relayWith([bridge, alice]);
  cleanup.push(() => relay.close());
  const mine = await relay.createChannel({ name: "confirm", members: [bridge.pk] });
  const theirs = await relay.createChannel({ name: "elsewhere", members: [alice.pk] });
  const bot = client(relay, bridge, { publish: { timeoutMs: 200, attempts: 1 } });
  cleanup.push(() => bot.stop());
  await bot.start();
  assert.equal(await bot.waitAuthenticated(10_000), true);

  const counted: string[] = [];
  const publisher = new Publisher({ relay: bot, logger: silentLogger(), onDone: (kind, status) => counted.push(`${kind} ${status}`) });
  relay.setSwallowOk(true);
  const stored = bot.sign(mention(mine, alice.pk, "stored, OK lost"));
  const confirmed = await publisher.publish(stored);
  assert.equal(confirmed.status, "duplicate");
  assert.equal(confirmed.reason, "stored before the OK timed out");
  // Refused by the relay and its OK swallowed too: nothing stored, so the timeout stands.
  const lost = await publisher.publish(bot.sign(mention(theirs, alice.pk, "refused, OK lost")));
  assert.equal(lost.status, "timeout");
  assert.deepEqual(counted, ["9 duplicate", "9 timeout"], "each publish counted once, by its confirmed outcome");
  relay.setSwallowOk(false);

  const unknown = "0".repeat(64);
  assert.deepEqual(await bot.storedAmong([stored.id, unknown], 50), [stored.id]);
  const t0 = Date.now();
  assert.deepEqual(await bot.storedAmong([unknown], 300), []);
  assert.ok(Date.now() - t0 >= 300, "none found: asked again after the settle time");
});
