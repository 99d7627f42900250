import { test, after } from "node:test";
import assert from "node:assert/strict";
import { ChannelDirectory, type ChannelInfo, type DirectorySource } from "../../src/buzz/directory.js";
import { KIND } from "../../src/nostr/kinds.js";
import { ProfileCache } from "../../src/buzz/profiles.js";
import { client, collector, identity, mention, relayWith } from "../fixtures/relay-helpers.js";
import { waitFor } from "../../kit/wait.js";
import { captureLogger } from "../../kit/queue-helpers.js";

const bridge = identity();
const alice = identity();
const cleanup: (() => unknown)[] = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

test("discovery lists the identity's channels with name, description and type", async () => {
  const relay = await relayWith([bridge, alice]);
  cleanup.push(() => relay.close());
  const general = await relay.createChannel({ name: "general", about: "Where the team talks", members: [bridge.pk, alice.pk] });
  const secret = await relay.createChannel({ name: "ops", about: "incidents", type: "private", members: [bridge.pk] });
  const dm = await relay.createChannel({ name: "dm", type: "dm", members: [bridge.pk, alice.pk] });
  await relay.createChannel({ name: "elsewhere", members: [alice.pk] });
  const bot = client(relay, bridge);
  cleanup.push(() => bot.stop());
  const dir = new ChannelDirectory(bot);
  const found = new Map((await dir.discover()).map((c) => [c.id, c]));
  assert.deepEqual([...found.keys()].sort(), [general, secret, dm].sort());
  assert.equal(found.get(general)!.name, "general");
  assert.equal(found.get(general)!.about, "Where the team talks");
  assert.equal(found.get(general)!.type, "stream");
  assert.equal(found.get(secret)!.type, "private");
  assert.equal(found.get(dm)!.type, "dm");
  assert.ok(found.get(general)!.members!.includes(alice.pk));
});

test("a member-added notification brings a new channel online and its first mention arrives", async () => {
  const relay = await relayWith([bridge, alice]);
  cleanup.push(() => relay.close());
  const home = await relay.createChannel({ name: "home", members: [bridge.pk, alice.pk] });
  const fresh = await relay.createChannel({ name: "fresh", about: "new room", members: [alice.pk] });
  const bot = client(relay, bridge);
  const author = client(relay, alice);
  cleanup.push(
    () => bot.stop(),
    () => author.stop(),
  );
  const got = collector(bot);
  const dir = new ChannelDirectory(bot).attach();
  const joined: ChannelInfo[] = [];
  // What the daemon does: one setChannels with the whole list, the new channel from the notification's time.
  dir.on("joined", (ch, since) => {
    joined.push(ch);
    bot.setChannels([
      { id: home, kinds: [9] },
      { id: ch.id, kinds: [9], since },
    ]);
  });
  assert.deepEqual(
    (await dir.discover()).map((c) => c.id),
    [home],
  );
  bot.setChannels([{ id: home, kinds: [9] }]);
  await Promise.all([bot.start(), author.start()]);
  assert.equal(await bot.waitSubscribed(10_000), true);
  assert.equal(await author.waitAuthenticated(10_000), true);

  await relay.addMember(fresh, bridge.pk);
  // The invitation's mention is published at once, before the bridge can have resubscribed.
  const { event, outcome } = await author.send(mention(fresh, bridge.pk, "welcome, please look at this"));
  assert.equal(outcome.status, "accepted");
  assert.equal(await got.until(1, 10_000), true, "the first mention in the new channel arrived");
  assert.equal(got.events[0]!.id, event.id);
  assert.equal(joined[0]!.name, "fresh");
  assert.equal(joined[0]!.about, "new room");
  assert.ok(bot.channelIds.includes(fresh));

  const left: string[] = [];
  dir.on("left", (id) => left.push(id));
  await relay.removeMember(fresh, bridge.pk);
  await waitFor(() => left.includes(fresh), { what: "the removal to be noticed" });
  assert.equal(dir.get(fresh), undefined);
});

test("NIP-98 query: two identical bodies in one second both succeed; count and profiles", async () => {
  const relay = await relayWith([bridge, alice]);
  cleanup.push(() => relay.close());
  const ch = await relay.createChannel({ name: "history", members: [bridge.pk, alice.pk] });
  const bot = client(relay, bridge);
  const author = client(relay, alice);
  cleanup.push(
    () => bot.stop(),
    () => author.stop(),
  );
  await author.start();
  assert.equal(await author.waitAuthenticated(10_000), true);
  for (let i = 0; i < 3; i++) assert.equal((await author.send(mention(ch, bridge.pk, `m${i}`))).outcome.status, "accepted");
  await author.send({
    kind: 0,
    created_at: Math.floor(Date.now() / 1000),
    tags: [],
    content: JSON.stringify({ name: "alice", display_name: "Alice A." }),
  });

  const filters = [{ kinds: [9], "#h": [ch], limit: 10 }];
  const [a, b] = await Promise.all([bot.query(filters), bot.query(filters)]);
  assert.equal(a.length, 3);
  assert.deepEqual(b.map((e) => e.id).sort(), a.map((e) => e.id).sort());
  assert.equal(bot.http.metrics.retries, 0, "neither was refused as a replay");
  assert.equal(await bot.count([{ kinds: [9], "#h": [ch] }]), 3);

  const profiles = new ProfileCache(bot);
  assert.equal(await profiles.displayName(alice.pk), "Alice A.");
  const requests = bot.http.metrics.requests;
  assert.equal(await profiles.displayName(alice.pk), "Alice A.");
  assert.equal(bot.http.metrics.requests, requests, "the second lookup came from the cache");
  assert.match(await profiles.displayName(identity().pk), /^npub1/);
});

test("a burst of look-ups of one author before the first answer asks the relay once", async () => {
  const relay = await relayWith([bridge, alice]);
  cleanup.push(() => relay.close());
  const author = client(relay, alice);
  cleanup.push(() => author.stop());
  await author.start();
  assert.equal(await author.waitAuthenticated(10_000), true);
  await author.send({ kind: 0, created_at: Math.floor(Date.now() / 1000), tags: [], content: JSON.stringify({ name: "alice" }) });
  const bot = client(relay, bridge);
  cleanup.push(() => bot.stop());
  const profiles = new ProfileCache(bot);
  // What a busy channel does to the gate: many events from one author, each asking at once.
  const found = await Promise.all(Array.from({ length: 50 }, () => profiles.lookup(alice.pk)));
  assert.deepEqual(new Set(found.map((p) => p?.displayName)), new Set(["alice"]));
  assert.equal(bot.http.metrics.requests, 1, "one profile request for the whole burst");
});

test('the follower listens where the config says: listed channels, or every channel with "*"', async () => {
  const { loadConfigText } = await import("../../src/config/load.js");
  const { ChannelFollower, configSelector } = await import("../../src/buzz/follow.js");
  const { bytesToHex } = await import("nostr-tools/utils");
  const relay = await relayWith([bridge, alice]);
  cleanup.push(() => relay.close());
  const general = await relay.createChannel({ name: "general", members: [bridge.pk, alice.pk] });
  const ops = await relay.createChannel({ name: "ops", members: [bridge.pk] });
  const yaml = (channels: string) =>
    `identity: { secret_key: "${bytesToHex(bridge.sk)}" }\nrelay: { url: "${relay.url}" }\nchannels: ${channels}\n`;
  const only = loadConfigText(yaml(`[{ id: "${general}", require_mention: false, kinds: [9, 40002] }]`), "test.yaml").config;
  const every = loadConfigText(yaml(`[{ id: "*" }]`), "test.yaml").config;

  const bot = client(relay, bridge);
  cleanup.push(() => bot.stop());
  const dir = new ChannelDirectory(bot).attach();
  const follower = new ChannelFollower(bot, dir, configSelector(only));
  await bot.start();
  await follower.refresh();
  assert.deepEqual(follower.channels, [{ id: general, kinds: [9, 40002], requireMention: false, since: undefined }]);
  assert.deepEqual(bot.channelIds, [general]);
  assert.equal(await bot.waitSubscribed(10_000), true);

  await follower.refresh(configSelector(every));
  assert.deepEqual(bot.channelIds.sort(), [general, ops].sort());
  // Defaults apply under "*": require_mention with participation on (thread, the default)
  // subscribes without #p, so the gate sees replies in the agent's threads.
  assert.equal(follower.channels.find((c) => c.id === ops)!.requireMention, false, 'defaults apply under "*"');
  const mentionsOnly = loadConfigText(yaml(`[{ id: "*" }]\ndefaults: { participation: "off" }`), "test.yaml").config;
  await follower.refresh(configSelector(mentionsOnly));
  assert.equal(follower.channels.find((c) => c.id === ops)!.requireMention, true, "with participation off, only mentions (#p)");
  await follower.refresh(configSelector(every));

  const late = await relay.createChannel({ name: "late", members: [alice.pk] });
  await relay.addMember(late, bridge.pk);
  await waitFor(() => bot.channelIds.includes(late), { what: "a channel joined at runtime to be followed" });
  assert.equal(await bot.waitSubscribed(10_000), true);
  const frames = bot.metrics.reqFrames;
  await follower.refresh();
  assert.equal(bot.metrics.reqFrames, frames, "an unchanged selection sends no REQ (the join's replay floor is spent)");
  follower.stop();
});

test("a configured channel id the relay knows nothing of, on a relay that keeps channel state, is a warning saying what to check", async () => {
  const relay = await relayWith([bridge, alice]);
  cleanup.push(() => relay.close());
  const general = await relay.createChannel({ name: "general", members: [bridge.pk, alice.pk] });
  const bot = client(relay, bridge);
  cleanup.push(() => bot.stop());
  const { logger, lines } = captureLogger();
  const dir = new ChannelDirectory(bot, logger);
  await dir.discover();
  const typo = "6f1c2a4e-0000-4000-8000-0000000000ff";
  const adopted = await dir.adopt([typo]);
  assert.deepEqual(
    adopted.map((c) => c.id),
    [typo],
    "still listened in: a relay may keep no state for a channel",
  );
  const line = lines.find((l) => l.evt === "relay.channel_state_unknown");
  assert.equal(line?.level, "warn", "a warning: this relay keeps channel state, so the id is likely wrong");
  assert.equal(line?.channel, typo);
  assert.match(String(line?.msg), /buzz-bridge doctor/);
  assert.match(String(line?.msg), new RegExp(`#general \\(${general}\\)`), "naming the channels the identity has");
});

test("a channel the identity is added to while a discovery runs is announced as joined, not taken in silently", async () => {
  const relay = await relayWith([bridge, alice]);
  cleanup.push(() => relay.close());
  const home = await relay.createChannel({ name: "home", members: [bridge.pk, alice.pk] });
  const fresh = await relay.createChannel({ name: "fresh", members: [alice.pk] });
  const bot = client(relay, bridge);
  cleanup.push(() => bot.stop());
  await bot.start();
  // The relay's replay of the #home notification is past before the directory listens.
  await waitFor(() => bot.counters.membership === 1, { what: "the #home notification replayed" });
  // The discovery's member-list query and the notification's look-up each wait for a go.
  const go = () => {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    return { promise, resolve };
  };
  const held = { discovery: go(), lookup: go() };
  let lookingUp = false;
  const source = {
    pubkey: bot.pubkey,
    query: async (filters: Parameters<typeof bot.query>[0]) => {
      if (filters.some((f) => f["#p"])) await held.discovery.promise;
      else if (filters.some((f) => f.kinds?.includes(KIND.groupMembers))) {
        lookingUp = true;
        await held.lookup.promise;
      }
      return bot.query(filters);
    },
    on: bot.on.bind(bot),
    off: bot.off.bind(bot),
  } as DirectorySource;
  const dir = new ChannelDirectory(source).attach();
  cleanup.push(() => dir.detach());
  const joined: string[] = [];
  dir.on("joined", (ch) => joined.push(ch.name));
  const discovery = dir.discover();
  await relay.addMember(fresh, bridge.pk);
  await waitFor(() => lookingUp, { what: "the added notification's look-up to start" });
  // The discovery now reads a member list that names the bridge in #fresh as well.
  held.discovery.resolve();
  assert.deepEqual((await discovery).map((c) => c.name).sort(), ["fresh", "home"]);
  held.lookup.resolve();
  await waitFor(() => joined.length > 0, { what: "#fresh announced as joined" });
  assert.deepEqual(joined, ["fresh"]);
  assert.deepEqual(
    dir
      .list()
      .map((c) => c.id)
      .sort(),
    [home, fresh].sort(),
  );
});
