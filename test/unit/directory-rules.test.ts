/**
 * What the channel directory makes of a relay's NIP-29 state (buzz/directory.ts): each
 * channel's type, members and bots, which version of an addressable event counts, archived
 * channels, the membership notifications, and how it asks the relay.
 *
 * The relay here is a store of events answering `/query` by nostr-tools' own filter
 * matching: a relay that keeps several versions of a channel's metadata or member list, or
 * returns them in any order, is what the directory must sort out, and the dev relay (which
 * test/unit/relay-directory.test.ts runs against) keeps only the newest.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { randomBytes } from "node:crypto";
import { generateSecretKey, getPublicKey, matchFilters, type Event, type Filter } from "nostr-tools";
import {
  ChannelDirectory,
  channelInfoOf,
  channelKinds,
  channelTypeOf,
  type ChannelInfo,
  type DirectorySource,
} from "../../src/buzz/directory.js";
import type { MembershipChange } from "../../src/relay/client.js";
import { FORUM_KINDS, KIND } from "../../src/nostr/kinds.js";
import { captureLogger } from "../../kit/queue-helpers.js";
import { waitFor } from "../../kit/wait.js";

const relayKey = getPublicKey(generateSecretKey());
const self = getPublicKey(generateSecretKey());
const alice = getPublicKey(generateSecretKey());
let seq = 0;
const channelId = () => `6f1c2a4e-0000-4000-8000-${String(++seq).padStart(12, "0")}`;
const T0 = 1_800_000_000;

/**
 * An event as the relay stores it. The directory reads the relay's own state over NIP-98 and
 * checks no signature, so none is made here (thousands of channels stay cheap).
 */
function stored(kind: number, tags: string[][], created_at: number): Event {
  return { kind, created_at, tags, content: "", pubkey: relayKey, id: randomBytes(32).toString("hex"), sig: "0".repeat(128) };
}
function metadata(id: string, tags: string[][], at = T0): Event {
  return stored(KIND.groupMetadata, [["d", id], ...tags], at);
}
function memberList(id: string, members: string[][], at = T0): Event {
  return stored(KIND.groupMembers, [["d", id], ...members], at);
}
/** The relay's 44100/44101 as the client hands them on. */
function change(type: "added" | "removed", channel: string, at: number): MembershipChange {
  const kind = type === "added" ? KIND.memberAdded : KIND.memberRemoved;
  return {
    type,
    channel,
    at,
    event: stored(
      kind,
      [
        ["h", channel],
        ["p", self],
      ],
      at,
    ),
  };
}

/** A relay's stored events behind `/query`, its membership notifications, and what it was asked. */
function storedRelay() {
  const bus = new EventEmitter();
  const stored: Event[] = [];
  const asked: Filter[][] = [];
  let refuse: Error | undefined;
  let hold: Promise<void> | undefined;
  const source: DirectorySource = {
    pubkey: self,
    query: async (filters) => {
      asked.push(filters);
      const held = hold;
      hold = undefined;
      if (held) await held;
      if (refuse) {
        const err = refuse;
        refuse = undefined;
        throw err;
      }
      return stored.filter((ev) => matchFilters(filters, ev));
    },
    on: (e, fn) => bus.on(e, fn),
    off: (e, fn) => bus.off(e, fn),
  };
  return {
    source,
    stored,
    asked,
    refuseNextQuery: (err: Error) => (refuse = err),
    /** The next query waits until the returned function is called. */
    holdNextQuery: () => {
      let release!: () => void;
      hold = new Promise<void>((r) => (release = r));
      return release;
    },
    notify: (c: MembershipChange) => bus.emit("membership", c),
    listeners: () => bus.listenerCount("membership"),
  };
}

/** A channel the identity is in: its metadata and member list. */
function channel(r: ReturnType<typeof storedRelay>, tags: string[][], members = [self, alice], at = T0): string {
  const id = channelId();
  r.stored.push(
    metadata(id, tags, at),
    memberList(
      id,
      members.map((p) => ["p", p]),
      at,
    ),
  );
  return id;
}

function events<K extends "joined" | "left" | "updated">(dir: ChannelDirectory, name: K) {
  const seen: unknown[][] = [];
  dir.on(name, ((...args: unknown[]) => seen.push(args)) as never);
  return seen;
}

test("a channel's type is read from its metadata as Buzz writes it", () => {
  const typeOf = (tags: string[][]) => channelTypeOf(metadata(channelId(), tags));
  assert.equal(typeOf([["t", "dm"]]), "dm");
  for (const hidden of [["hidden"], ["hidden", ""], ["hidden", "true"]]) assert.equal(typeOf([hidden]), "dm", JSON.stringify(hidden));
  assert.equal(typeOf([["hidden", "false"]]), "stream", "hidden only when it says so");
  assert.equal(typeOf([["t", "private"]]), "private");
  assert.equal(typeOf([["private"]]), "private");
  assert.equal(typeOf([["t", "forum"]]), "forum");
  assert.equal(typeOf([["t", "stream"]]), "stream");
  // Other bare or empty tags say nothing of the type.
  assert.equal(typeOf([["name", "general"], ["about", ""], ["picture"], ["archived", "true"]]), "stream");
});

test("in a forum channel the bridge listens to its posts and comments as well; elsewhere to the kinds it was given", () => {
  assert.deepEqual(channelKinds([KIND.message], "forum"), [KIND.message, ...FORUM_KINDS]);
  assert.deepEqual(channelKinds([KIND.message, FORUM_KINDS[0]!], "forum"), [KIND.message, ...FORUM_KINDS], "each kind once");
  for (const type of ["stream", "private", "dm", "unknown"] as const)
    assert.deepEqual(channelKinds([KIND.message], type), [KIND.message], type);
});

test("the members and the bots of a channel are its member list's, each once; a channel with no metadata is unknown", () => {
  const id = channelId();
  const bot = getPublicKey(generateSecretKey());
  const list = memberList(id, [
    ["p", self],
    ["p", bot.toUpperCase(), "", "bot"],
    ["p", bot, "", "bot"],
    ["p", alice, "", "member"],
    ["p", "", "", "bot"],
    ["e", alice, "", "bot"],
  ]);
  const info = channelInfoOf(
    id,
    metadata(id, [
      ["name", "ops"],
      ["about", "incidents"],
    ]),
    list,
  );
  assert.deepEqual(info.bots, [bot], "Buzz Desktop's bot seats: role bot, lowercase, once");
  assert.deepEqual(info.members, [self, bot.toUpperCase(), bot, alice], "every p with a pubkey, once");
  assert.deepEqual(
    { name: info.name, about: info.about, type: info.type, archived: info.archived },
    { name: "ops", about: "incidents", type: "stream", archived: false },
  );
  assert.deepEqual(channelInfoOf(id, undefined), { id, name: "unknown", about: "", type: "unknown", archived: false, members: undefined });
  assert.deepEqual(channelInfoOf(id, undefined, list).bots, [bot], "a member list without metadata still seats its bots");
  assert.equal("bots" in channelInfoOf(id, metadata(id, [["name", "ops"]])), false, "no member list, no bots to say");
  const named = channelInfoOf(id, metadata(id, []));
  assert.deepEqual([named.name, named.about], ["unknown", ""], "metadata without name or about");
  assert.equal(channelInfoOf(id, metadata(id, [["archived", "true"]])).archived, true);
});

test("of several versions of a channel's metadata or member list, the newest counts in any order; in one second the lower id", async () => {
  const r = storedRelay();
  const renamed = channelId();
  const older = metadata(renamed, [["name", "old-name"]], T0);
  const newer = metadata(renamed, [["name", "new-name"]], T0 + 60);
  const left = channelId();
  r.stored.push(
    newer,
    older,
    memberList(renamed, [["p", self]]),
    metadata(left, [["name", "left-room"]]),
    // The identity was in #left-room, and is no longer.
    memberList(left, [["p", self]], T0),
    memberList(left, [["p", alice]], T0 + 60),
  );
  // A relay that keeps old versions and answers the member lists' query by kind alone (its
  // #p not indexed): the newest list of #left-room, without the identity, has the last word.
  const byKind = r.source.query;
  r.source.query = (filters) => byKind(filters.map(({ "#p": _, ...f }) => f));
  const dir = new ChannelDirectory(r.source);
  assert.deepEqual(
    (await dir.discover()).map((c) => c.name),
    ["new-name"],
  );
  r.stored.reverse();
  assert.deepEqual(
    (await new ChannelDirectory(r.source).discover()).map((c) => c.name),
    ["new-name"],
    "the same whatever the order",
  );

  const tie = channelId();
  const a = metadata(tie, [["name", "first"]], T0 + 5);
  const b = metadata(tie, [["name", "second"]], T0 + 5);
  const lower = a.id < b.id ? a : b;
  for (const order of [
    [a, b],
    [b, a],
  ]) {
    const t = storedRelay();
    t.stored.push(...order, memberList(tie, [["p", self]]));
    assert.deepEqual(
      (await new ChannelDirectory(t.source).discover()).map((c) => c.name),
      [tagName(lower)],
    );
  }
});

const tagName = (ev: Event) => ev.tags.find((t) => t[0] === "name")![1];

test("an archived channel is not listed; the discovery's log line counts the channels and the archived", async () => {
  const r = storedRelay();
  const open = channel(r, [["name", "open"]]);
  channel(r, [
    ["name", "shut"],
    ["archived", "true"],
  ]);
  const { logger, lines } = captureLogger();
  const dir = new ChannelDirectory(r.source, logger);
  assert.deepEqual(
    (await dir.discover()).map((c) => c.id),
    [open],
  );
  assert.equal(dir.get(open)?.name, "open");
  const line = lines.find((l) => l.evt === "relay.channels_discovered");
  assert.deepEqual([line?.level, line?.count, line?.archived, line?.msg], ["info", 1, 1, "channels discovered"]);
});

test("a refresh gives the channel's new metadata; once archived, the channel is left, once", async () => {
  const r = storedRelay();
  const id = channel(r, [["name", "before"]]);
  const dir = new ChannelDirectory(r.source);
  await dir.discover();
  const updated = events(dir, "updated");
  const left = events(dir, "left");
  r.stored.push(
    metadata(
      id,
      [
        ["name", "after"],
        ["about", "new words"],
      ],
      T0 + 10,
    ),
  );
  const info = await dir.refresh(id);
  assert.equal(info?.name, "after");
  assert.deepEqual(
    updated.map(([c]) => [(c as ChannelInfo).name, (c as ChannelInfo).about]),
    [["after", "new words"]],
  );
  assert.equal(dir.get(id)?.about, "new words");
  r.stored.push(
    metadata(
      id,
      [
        ["name", "after"],
        ["archived", "true"],
      ],
      T0 + 20,
    ),
  );
  assert.equal((await dir.refresh(id))?.archived, true);
  assert.deepEqual(left, [[id]]);
  assert.equal(dir.get(id), undefined);
  await dir.refresh(id);
  assert.deepEqual(left, [[id]], "an archived channel no longer listed is not left again");
  assert.equal(updated.length, 1, "an archived channel is not 'updated'");
});

test("added notifications in a burst are looked up in one query and joined from the earliest notification's time", async () => {
  const r = storedRelay();
  const known = channel(r, [["name", "known"]]);
  const { logger, lines } = captureLogger();
  const dir = new ChannelDirectory(r.source, logger).attach();
  await dir.discover();
  const joined = events(dir, "joined");
  const fresh = channel(r, [["name", "fresh"]]);
  const other = channel(r, [["name", "other"]]);
  const shut = channel(r, [
    ["name", "shut"],
    ["archived", "true"],
  ]);
  const notMine = channel(r, [["name", "not-mine"]], [alice]);
  const before = r.asked.length;
  await Promise.all([
    dir.apply(change("added", fresh, T0 + 30)),
    dir.apply(change("added", fresh, T0 + 20)),
    dir.apply(change("added", fresh, T0 + 40)),
    dir.apply(change("added", other, T0 + 50)),
    dir.apply(change("added", shut, T0 + 50)),
    dir.apply(change("added", notMine, T0 + 50)),
    dir.apply(change("added", known, T0 + 50)),
  ]);
  assert.deepEqual(
    joined.map(([c, since]) => [(c as ChannelInfo).name, since]),
    [
      ["fresh", T0 + 20],
      ["other", T0 + 50],
    ],
    "the earliest time of #fresh's; not the archived, not one whose member list lacks the identity, not one already known",
  );
  assert.equal(r.asked.length - before, 1, "one query for the burst");
  assert.deepEqual(r.asked.at(-1)![0]!["#d"], [fresh, other, shut, notMine], "the channels not yet known, each once");
  assert.deepEqual(
    lines.filter((l) => l.evt === "relay.channel_joined").map((l) => [l.channel, l.name, l.msg]),
    [
      [fresh, "fresh", "added to channel"],
      [other, "other", "added to channel"],
    ],
  );
  assert.deepEqual(
    dir
      .list()
      .map((c) => c.name)
      .sort(),
    ["fresh", "known", "other"],
  );
});

test("a removed notification leaves the channel and says so; a later added one joins it again", async () => {
  const r = storedRelay();
  const id = channel(r, [["name", "room"]]);
  const { logger, lines } = captureLogger();
  const dir = new ChannelDirectory(r.source, logger).attach();
  await dir.discover();
  const left = events(dir, "left");
  const joined = events(dir, "joined");
  r.notify(change("removed", id, T0 + 10));
  assert.deepEqual(left, [[id]]);
  assert.equal(dir.get(id), undefined);
  assert.deepEqual(
    lines.filter((l) => l.evt === "relay.channel_left").map((l) => [l.level, l.channel, l.msg]),
    [["info", id, "removed from channel"]],
  );
  await dir.apply(change("added", id, T0 + 20));
  assert.deepEqual(
    joined.map(([c, since]) => [(c as ChannelInfo).id, since]),
    [[id, T0 + 20]],
  );
});

test("a look-up that fails still joins the channel, as unknown, and says why; the next one works", async () => {
  const r = storedRelay();
  const { logger, lines } = captureLogger();
  const dir = new ChannelDirectory(r.source, logger).attach();
  await dir.discover();
  const joined = events(dir, "joined");
  const first = channel(r, [["name", "first"]]);
  r.refuseNextQuery(new Error("relay said 503"));
  await dir.apply(change("added", first, T0 + 10));
  assert.deepEqual(
    joined.map(([c]) => [(c as ChannelInfo).id, (c as ChannelInfo).type]),
    [[first, "unknown"]],
  );
  const warn = lines.find((l) => l.evt === "relay.channel_lookup_failed");
  assert.deepEqual(
    [warn?.level, warn?.channels, warn?.err, warn?.msg],
    ["warn", [first], "relay said 503", "channel metadata lookup failed; joining anyway"],
  );
  const second = channel(r, [["name", "second"]]);
  await dir.apply(change("added", second, T0 + 20));
  assert.deepEqual(
    joined.map(([c]) => (c as ChannelInfo).name),
    ["unknown", "second"],
  );
});

test("after detach, membership notifications are no longer followed", async () => {
  const r = storedRelay();
  const dir = new ChannelDirectory(r.source).attach();
  assert.equal(r.listeners(), 1);
  dir.detach();
  assert.equal(r.listeners(), 0);
});

test("a configured channel with no NIP-29 state is adopted and logged once; one with state the identity is not in is not", async () => {
  const r = storedRelay();
  const { logger, lines } = captureLogger();
  const dir = new ChannelDirectory(r.source, logger);
  await dir.discover();
  const stateless = [channelId(), channelId()];
  const theirs = channelId();
  r.stored.push(metadata(theirs, [["name", "theirs"]]), memberList(theirs, [["p", alice]]));
  const rosterOnly = channelId();
  r.stored.push(memberList(rosterOnly, [["p", alice]]));
  const metaOnly = channelId();
  r.stored.push(metadata(metaOnly, [["name", "meta-only"]]));
  assert.deepEqual(
    (await dir.adopt([...stateless, theirs, rosterOnly, metaOnly])).map((c) => c.id),
    stateless,
  );
  assert.deepEqual(
    (await dir.adopt(stateless)).map((c) => c.id),
    stateless,
    "adopted again on a second call",
  );
  const logged = lines.filter((l) => l.evt === "relay.channel_state_unknown");
  assert.deepEqual(
    logged.map((l) => [l.level, l.channel]),
    stateless.map((id) => ["info", id]),
    "once per channel, at info: this relay keeps no channel state, and adopted channels are no sign that it does",
  );
  assert.match(String(logged[0]!.msg), /no NIP-29 state for this configured channel/);
});

test("no channels, no metadata query; more than 500 are asked for in filters of 500", async () => {
  const r = storedRelay();
  const dir = new ChannelDirectory(r.source);
  assert.deepEqual(await dir.discover(), []);
  assert.deepEqual(
    [...r.asked],
    [[{ kinds: [KIND.groupMembers], "#p": [self] }]],
    "the member lists naming the identity, and nothing more",
  );
  const ids = Array.from({ length: 1_000 }, () => channelId());
  for (const id of ids) r.stored.push(metadata(id, [["name", id.slice(-4)]]), memberList(id, [["p", self]]));
  const found = await new ChannelDirectory(r.source).discover();
  assert.equal(found.length, 1_000);
  assert.deepEqual(
    r.asked.at(-1)!.map((f) => f["#d"]!.length),
    [500, 500],
    "no empty filter after the last 500",
  );
  assert.deepEqual(
    r.asked.at(-1)!.flatMap((f) => f["#d"]),
    ids,
  );
});

test("a configured channel unknown to a relay that keeps state for the identity's other channels is a warning naming them", async () => {
  const r = storedRelay();
  const general = channel(r, [["name", "general"]]);
  const { logger, lines } = captureLogger();
  const dir = new ChannelDirectory(r.source, logger);
  await dir.discover();
  const typo = channelId();
  assert.deepEqual(
    (await dir.adopt([typo])).map((c) => c.id),
    [typo],
  );
  const line = lines.find((l) => l.evt === "relay.channel_state_unknown");
  assert.equal(line?.level, "warn");
  assert.equal(
    line?.msg,
    `the relay knows no channel ${typo} (no name, no members) though it keeps state for this identity's other channels: check the UUID in the config — \`buzz-bridge doctor\` lists the identity's channels: #general (${general}); listening in it anyway`,
  );
});

test("a second notification for a channel while the first one's look-up runs joins it once", async () => {
  const r = storedRelay();
  const dir = new ChannelDirectory(r.source).attach();
  await dir.discover();
  const joined = events(dir, "joined");
  const id = channel(r, [["name", "twice"]]);
  const release = r.holdNextQuery();
  const first = dir.apply(change("added", id, T0 + 10));
  await waitFor(() => r.asked.length === 2, { what: "the first look-up to be asked" });
  // The second notification's batch looks the channel up again and joins it first.
  await dir.apply(change("added", id, T0 + 20));
  release();
  await first;
  assert.deepEqual(
    joined.map(([c, since]) => [(c as ChannelInfo).id, since]),
    [[id, T0 + 20]],
  );
});
