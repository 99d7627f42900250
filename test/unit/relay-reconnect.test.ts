import { test, after } from "node:test";
import assert from "node:assert/strict";
import type { RelayClient } from "../../src/relay/client.js";
import { client, collector, FAST, identity, mention, relayWith } from "../fixtures/relay-helpers.js";
import { sleep, waitFor } from "../../kit/wait.js";

const bridge = identity();
const alice = identity();
const cleanup: (() => unknown)[] = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

async function setUp() {
  // The test is about reconnecting, not the frame quota: the relay has none and the author
  // keeps none (with Buzz's 50 frames per 5 s, 200 mentions wait out four windows).
  const relay = await relayWith([bridge, alice], { noLimits: true });
  cleanup.push(() => relay.close());
  const channel = await relay.createChannel({ name: "general", members: [bridge.pk, alice.pk] });
  // The bridge comes back slower than the author, so mentions are published while it is away.
  const bot = client(relay, bridge, { connection: { ...FAST, backoff: { baseMs: 400, capMs: 800 } } });
  const author = client(relay, alice, { connection: { ...FAST, frameQuota: null } });
  cleanup.push(
    () => bot.stop(),
    () => author.stop(),
  );
  const got = collector(bot);
  bot.setChannels([{ id: channel, kinds: [9], requireMention: true }]);
  await bot.start();
  await author.start();
  assert.equal(await bot.waitSubscribed(10_000), true);
  assert.equal(await author.waitAuthenticated(10_000), true);
  return { relay, channel, bot, author, got };
}

/** Publishes `n` mentions, 10 at a time, calling `disrupt` after the first `at`; all must be stored. */
async function stream(author: RelayClient, channel: string, n: number, at: number, disrupt: () => unknown) {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 10) {
    if (i === at) await disrupt();
    const batch = await Promise.all(Array.from({ length: 10 }, (_, j) => author.send(mention(channel, bridge.pk, `mention ${i + j}`))));
    for (const b of batch) {
      assert.ok(b.outcome.status === "accepted" || b.outcome.status === "duplicate", `publish ${b.outcome.status}: ${b.outcome.reason}`);
      ids.push(b.event.id);
    }
  }
  return ids;
}

function assertExactlyOnce(seen: Map<string, number>, ids: string[]) {
  const missing = ids.filter((id) => !seen.has(id));
  assert.equal(missing.length, 0, `${missing.length} mentions never arrived`);
  const twice = [...seen.entries()].filter(([, n]) => n > 1);
  assert.equal(twice.length, 0, `${twice.length} mentions were handled twice`);
}

test("dropAll during a stream of 200 mentions: after reconnect every one arrives exactly once", async () => {
  const { relay, channel, bot, author, got } = await setUp();
  const ids = await stream(author, channel, 200, 60, () => relay.dropAll());
  assert.equal(await got.until(200, 30_000), true, `only ${got.seen.size} of 200 arrived`);
  await sleep(300); // a late replay would show up as a duplicate delivery now
  assertExactlyOnce(got.seen, ids);
  assert.ok(bot.metrics.reconnects >= 1, "the bridge reconnected");
  assert.ok(bot.metrics.duplicates > 0, "the resubscribe overlapped what was already handled (since = last − 5 s)");
});

test("relay restart on the same port during a stream: every mention arrives exactly once", async () => {
  const { relay, channel, bot, author, got } = await setUp();
  const ids = await stream(author, channel, 200, 100, () => relay.restart());
  assert.equal(await got.until(200, 30_000), true, `only ${got.seen.size} of 200 arrived`);
  await sleep(300); // as above: a late replay would show up now
  assertExactlyOnce(got.seen, ids);
  assert.ok(bot.metrics.reconnects >= 1);
  assert.ok(bot.metrics.duplicates > 0, "the resubscribe replayed and de-duplicated");
  assert.equal(bot.state === "subscribed" || bot.state === "authenticated", true);
});

test("a re-challenge is answered and the subscription keeps delivering", async () => {
  const { relay, channel, bot, author, got } = await setUp();
  const authBefore = bot.metrics.authOk;
  relay.rechallenge();
  await waitFor(() => bot.metrics.authOk !== authBefore, { timeoutMs: 5000, what: "an AUTH answering the new challenge" });
  assert.equal(bot.metrics.authOk, authBefore + 1, "the bridge signed the new challenge");
  assert.equal(bot.metrics.reconnects, 0, "no reconnect was needed");
  const { event } = await author.send(mention(channel, bridge.pk, "after the re-challenge"));
  assert.equal(await got.until(1), true);
  assert.equal(got.events[0]!.id, event.id);
});
