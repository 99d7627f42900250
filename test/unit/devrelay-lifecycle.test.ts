/** dropAll, restart on the same port, SQLite persistence and seed files. */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateSecretKey, getPublicKey, nip19, type Event } from "nostr-tools";
import { DevRelayAdminError, loadSeed, SeedError, startDevRelay } from "../../src/devrelay/index.js";
import { RawClient, sign } from "../../kit/raw-client.js";

const dir = mkdtempSync(join(tmpdir(), "devrelay-life-"));
after(() => rmSync(dir, { recursive: true, force: true }));

describe("dev relay lifecycle", () => {
  const alice = generateSecretKey();
  const A = getPublicKey(alice);

  it("dropAll cuts every connection and a reconnect works", async () => {
    const relay = await startDevRelay();
    try {
      const ch = await relay.createChannel({ name: "g", members: [A] });
      const c = await RawClient.authed(relay.url, alice);
      const closed = new Promise<void>((resolve) => c.ws.once("close", () => resolve()));
      relay.dropAll();
      await closed;
      const again = await RawClient.authed(relay.url, alice);
      assert.equal((await again.publish(sign({ kind: 9, tags: [["h", ch]] }, alice)))[2], true);
      assert.equal(relay.stats().connections, 1);
      await again.close();
    } finally {
      await relay.close();
    }
  });

  it("restart keeps the port and all state", async () => {
    const relay = await startDevRelay();
    try {
      const ch = await relay.createChannel({ name: "g", members: [A] });
      const c = await RawClient.authed(relay.url, alice);
      const ev = sign({ kind: 9, tags: [["h", ch]], content: "before restart" }, alice);
      await c.publish(ev);
      const url = relay.url;
      const closed = new Promise<void>((resolve) => c.ws.once("close", () => resolve()));
      await relay.restart();
      assert.equal(relay.url, url);
      await closed;
      const again = await RawClient.authed(relay.url, alice);
      const { events } = await again.req("h", { "#h": [ch], kinds: [9] });
      assert.deepEqual(
        events.map((e) => e.id),
        [ev.id],
      );
      await again.close();
    } finally {
      await relay.close();
    }
  });

  it("with dataDir, events, channels, members and the relay key survive a new process", async () => {
    const data = join(dir, "data");
    const bob = generateSecretKey();
    const first = await startDevRelay({ dataDir: data });
    const ch = await first.createChannel({ name: "kept", about: "persisted", type: "private", members: [A] });
    first.addRelayMember(getPublicKey(bob));
    const c = await RawClient.authed(first.url, alice);
    const ev = sign({ kind: 9, tags: [["h", ch]], content: "durable" }, alice);
    await c.publish(ev);
    await c.close();
    const relayKey = first.relayPubkey;
    await first.close();

    const second = await startDevRelay({
      dataDir: data,
      seed: { members: [], channels: [{ name: "kept", members: [A], type: "private", messages: [] }] },
    });
    try {
      assert.equal(second.relayPubkey, relayKey);
      assert.deepEqual(second.seeded, [{ id: ch, name: "kept" }]);
      const c2 = await RawClient.authed(second.url, alice);
      const hist = await c2.req("h", { kinds: [9], "#h": [ch] });
      assert.deepEqual(
        hist.events.map((e) => e.content),
        ["durable"],
      );
      assert.equal((await c2.publish(sign({ kind: 9, tags: [["h", ch]], content: "still a member" }, alice)))[2], true);
      const meta = await c2.req("m", { kinds: [39000], "#d": [ch] });
      assert.equal(meta.events.length, 1);
      assert.equal((meta.events[0] as Event).tags.find((t) => t[0] === "about")?.[1], "persisted");
      await c2.close();
      const b = await RawClient.authed(second.url, bob);
      await b.close();
    } finally {
      await second.close();
    }
  });

  it("admin calls take npub or hex and say what is wrong otherwise", async () => {
    const relay = await startDevRelay();
    try {
      const ch = await relay.createChannel({ name: "g", members: [nip19.npubEncode(A)] });
      const c = await RawClient.authed(relay.url, alice);
      await c.close();
      await assert.rejects(
        relay.addMember(ch, "nonsense"),
        (err: unknown) => err instanceof DevRelayAdminError && /bad pubkey/.test(err.message),
      );
      await assert.rejects(relay.addMember("no-such-channel", A), /no channel with id/);
      await assert.rejects(relay.createChannel({ id: ch, name: "again" }), /already exists/);
    } finally {
      await relay.close();
    }
  });

  it("loads a YAML seed with npub and hex keys and posts its initial messages", async () => {
    const file = join(dir, "seed.yaml");
    const bob = generateSecretKey();
    writeFileSync(
      file,
      [
        `members: [${getPublicKey(bob)}]`,
        "channels:",
        "  - name: general",
        "    about: What this room is for",
        `    members: [${nip19.npubEncode(A)}]`,
        "    messages:",
        `      - author_nsec: ${nip19.nsecEncode(alice)}`,
        "        content: hello from the seed",
      ].join("\n"),
    );
    const seed = loadSeed(file);
    assert.equal(seed.channels[0]!.members[0], A);
    const relay = await startDevRelay({ seed: file });
    try {
      const ch = relay.seeded[0]!.id;
      const c = await RawClient.authed(relay.url, alice);
      const { events } = await c.req("h", { kinds: [9], "#h": [ch] });
      assert.deepEqual(
        events.map((e) => [e.pubkey, e.content]),
        [[A, "hello from the seed"]],
      );
      await c.close();
    } finally {
      await relay.close();
    }
  });

  it("a seed names members with a kind 0 profile signed by their own key, and a channel without an id keeps one UUID across starts", async () => {
    const seedDir = mkdtempSync(join(dir, "named-"));
    const bob = generateSecretKey();
    writeFileSync(join(seedDir, "bob.nsec"), `${nip19.nsecEncode(bob)}\n`, { mode: 0o600 });
    const file = join(seedDir, "seed.yaml");
    writeFileSync(
      file,
      [
        "members:",
        `  - { nsec: ${nip19.nsecEncode(alice)}, name: alice }`,
        "  - { key_file: bob.nsec, name: bob }",
        "channels:",
        "  - name: general",
        "    members: [alice, bob]",
      ].join("\n"),
    );
    const ids: string[] = [];
    for (let start = 0; start < 2; start++) {
      const relay = await startDevRelay({ seed: file });
      try {
        ids.push(relay.seeded[0]!.id);
        const c = await RawClient.authed(relay.url, alice);
        const { events } = await c.req("profiles", { kinds: [0], authors: [A, getPublicKey(bob)] });
        assert.deepEqual(
          events.map((e) => [e.pubkey, JSON.parse(e.content).name]).sort(),
          [
            [A, "alice"],
            [getPublicKey(bob), "bob"],
          ].sort(),
          "each profile signed by its member (the relay verified it like any event)",
        );
        const { events: members } = await c.req("m", { kinds: [39002], "#d": [ids[start]!] });
        assert.deepEqual(
          members[0]!.tags
            .filter((t) => t[0] === "p")
            .map((t) => t[1])
            .sort(),
          [A, getPublicKey(bob)].sort(),
        );
        await c.close();
      } finally {
        await relay.close();
      }
    }
    assert.match(ids[0]!, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.equal(ids[1], ids[0], "the same UUID without --data: a config naming it keeps working after a restart");
  });

  it("a seed member's name needs its secret key, and a channel member that is neither a key nor a named member is refused", () => {
    const file = join(dir, "bad-names.yaml");
    writeFileSync(file, `members:\n  - { pubkey: ${A}, name: alice }\nchannels:\n  - name: g\n    members: [carol]\n`);
    assert.throws(
      () => loadSeed(file),
      (err: unknown) => {
        assert.ok(err instanceof SeedError);
        assert.match(err.message, /members\.0: a name needs the member's secret key/);
        return true;
      },
    );
    writeFileSync(file, `members:\n  - { pubkey: ${A} }\nchannels:\n  - name: g\n    members: [carol]\n`);
    assert.throws(() => loadSeed(file), /channels\.0\.members\.0: expected npub1… or 64 hex characters, nor the name of a member/);
  });

  it("reports a bad seed with the file and what is wrong, never echoing a secret", () => {
    const file = join(dir, "bad.yaml");
    const nsec = nip19.nsecEncode(generateSecretKey());
    writeFileSync(file, `members: [${nsec}]\nchannels:\n  - about: no name\n    type: lobby\n`);
    assert.throws(
      () => loadSeed(file),
      (err: unknown) => {
        assert.ok(err instanceof SeedError);
        assert.ok(err.message.includes(file));
        assert.match(err.message, /members\.0: this is a secret key/);
        assert.match(err.message, /channels\.0\.name/);
        assert.match(err.message, /channels\.0\.type/);
        assert.ok(!err.message.includes(nsec));
        return true;
      },
    );
    assert.throws(() => loadSeed(join(dir, "missing.yaml")), /cannot read the file/);
  });
});
