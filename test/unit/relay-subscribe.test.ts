import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import type { DevRelay } from "../../src/devrelay/index.js";
import type { RelayClient } from "../../src/relay/client.js";
import { client, collector, identity, mention, relayWith } from "../fixtures/relay-helpers.js";

const bridge = identity();
const alice = identity();
let relay: DevRelay;
const clients: RelayClient[] = [];
const channels: string[] = [];

before(async () => {
  relay = await relayWith([bridge, alice]);
  for (let i = 0; i < 500; i++)
    channels.push(await relay.createChannel({ name: `room-${i}`, about: `room ${i}`, members: [bridge.pk, alice.pk] }));
});

after(async () => {
  for (const c of clients) c.stop();
  await relay.close();
});

test("500 channels are subscribed with at most 3 REQ frames and a mention in any of them arrives", async () => {
  const before = relay.stats().reqFrames;
  const bot = client(relay, bridge);
  clients.push(bot);
  const got = collector(bot);
  bot.setChannels(channels.map((id) => ({ id, kinds: [9], requireMention: true })));
  await bot.start();
  assert.equal(await bot.waitSubscribed(15_000), true, "the relay acknowledged the channel subscription");
  const frames = relay.stats().reqFrames - before;
  assert.ok(frames <= 3, `sent ${frames} REQ frames`);
  assert.equal(bot.metrics.reqFrames, 2, "one for channels, one for membership");

  const author = client(relay, alice);
  clients.push(author);
  await author.start();
  const target = channels[437]!;
  const { event, outcome } = await author.send(mention(target, bridge.pk, "hello room 437"));
  assert.equal(outcome.status, "accepted");
  assert.equal(await got.until(1), true, "the mention arrived");
  assert.equal(got.events[0]!.id, event.id);
  assert.equal(got.events[0]!.tags.find((t) => t[0] === "h")![1], target);

  // A message that does not mention the bridge stays out (require_mention).
  await author.send({ kind: 9, created_at: Math.floor(Date.now() / 1000), content: "chatter", tags: [["h", target]] });
  const second = await author.send(mention(channels[3]!, bridge.pk, "and room 3"));
  assert.equal(await got.until(2), true);
  assert.deepEqual(
    got.events.map((e) => e.id),
    [event.id, second.event.id],
  );

  // Changing the channel set replaces the subscription with one frame.
  const reqBefore = bot.metrics.reqFrames;
  bot.setChannels(channels.slice(0, 250).map((id) => ({ id, kinds: [9], requireMention: true })));
  assert.equal(await bot.waitSubscribed(10_000), true);
  assert.equal(bot.metrics.reqFrames - reqBefore, 1);
});
