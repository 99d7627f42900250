/**
 * A team in one daemon as Buzz Desktop sees it (docs/protocol.md "Buzz Desktop"), judged
 * from the relay with Desktop's rules (test/fixtures/desktop.ts) for the owner, an
 * allowlisted teammate and a stranger:
 * - agent A (NIP-OA tag from `attest`): answers the teammate in #releases (seated bot by an
 *   admin), the owner in #lobby (open, not a member: it seats itself as bot) and in #vault
 *   (private, not a member: refused; doctor says who must seat it); a pre-existing
 *   `{"channel_add_policy":"anyone","x":1}` survives its entry;
 * - agent B (every channel it is in): answers anyone in #floor, and in #annex once seated there
 *   (its entry follows the membership change);
 * - one profile and one entry per agent; a reload republishes; `register` publishes the
 *   owner's 30177 (d = agent) and refuses the agent's key, a key that is not the owner and a
 *   config naming none; release builds then offer A (attested) and not B;
 * - a relay that refuses A's entry and its seat (a frame proxy answers OK false): refusals
 *   logged, A still answers a mention exactly once, and doctor says what is missing and why.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { nip19, type Event } from "nostr-tools";
import { stringify } from "yaml";
import { World, type Person } from "../kit/world.js";
import { startFrameProxy } from "../kit/frame-proxy.js";
import { teamAgents, teamShared } from "./fixtures/team.js";
import { runCli } from "./fixtures/cli.js";
import { desktopOffers, nipOaOwner, strictParseProblems } from "./fixtures/desktop.js";

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

test("Desktop offers each agent of a team to exactly whom its channels answer, from the records on the relay", {
  timeout: 240_000,
}, async () => {
  const w = await World.create({ channelName: "team-room" });
  // The daemon and doctor reach the relay through a proxy that, once `refusing` is set, answers
  // OK false for agent A's directory entry and seats in the relay's place.
  let refusing = false;
  const refused: number[] = [];
  const proxy = await startFrameProxy(w.relay.url, {
    intercept: (f, answer) => {
      const ev = f[0] === "EVENT" ? (f[1] as { id: string; kind: number; pubkey: string }) : undefined;
      if (!refusing || ev?.pubkey !== w.agent.pk || (ev.kind !== 10100 && ev.kind !== 9000)) return false;
      refused.push(ev.kind);
      answer(["OK", ev.id, false, "blocked: this relay takes no agent records"]);
      return true;
    },
  });
  cleanup.push(
    () => w.close(),
    () => proxy.close(),
  );
  const [a, b] = await teamAgents(w, 1);
  const people = [w.owner.pk, w.teammate.pk, w.stranger.pk];
  const releases = await w.relay.createChannel({ name: "releases", type: "stream", members: people });
  const lobby = await w.relay.createChannel({ name: "lobby", type: "stream", members: people });
  const vault = await w.relay.createChannel({ name: "vault", type: "private", members: people });
  const floor = await w.relay.createChannel({ name: "floor", type: "stream", members: people });
  await w.relay.addMember(releases, a!.pk, "bot");
  await w.relay.addMember(floor, b!.pk, "bot");

  // A directory entry written by Buzz's CLI before the daemon ever ran.
  const aClient = await w.agent.relay();
  const seeded = await aClient.send({
    kind: 10100,
    created_at: Math.floor(Date.now() / 1000) - 5,
    tags: [],
    content: '{"channel_add_policy":"anyone","x":1}',
  });
  assert.equal(seeded.outcome.status, "accepted");
  w.agent.stop();

  const ownerKey = join(w.dir, "owner.nsec");
  writeFileSync(ownerKey, `${w.owner.nsec}\n`, { mode: 0o600 });
  const attest = await runCli(["attest", "--owner-key", ownerKey, nip19.npubEncode(a!.pk)]);
  assert.equal(attest.status, 0, attest.stderr);
  const authTag = JSON.parse(attest.stdout) as string[];
  assert.equal(nipOaOwner(a!.pk, { tags: [authTag] } as Event), w.owner.pk, "the attest output verifies for the agent");
  assert.ok(!attest.stdout.includes(w.owner.nsec) && !attest.stderr.includes(w.owner.nsec), "the owner's key is never printed");

  const configOf = (stranger: boolean, more: { id: string; respond_to: string }[] = []) => ({
    ...teamShared(w, { relay: { presence: false, url: proxy.url } }),
    agents: [
      {
        identity: {
          secret_key: a!.nsec,
          auth_tag: JSON.stringify(authTag),
          profile: { name: "builder", display_name: "Builder", about: "builds", picture: "https://example.com/b.png" },
        },
        channels: [
          { id: releases, respond_to: "allowlist", allow: stranger ? [w.teammate.npub, w.stranger.npub] : [w.teammate.npub] },
          { id: lobby, respond_to: "owner-only" },
          { id: vault, respond_to: "owner-only" },
          ...more,
        ],
      },
      { identity: { secret_key: b!.nsec }, channels: [{ id: "*", respond_to: "anyone" }] },
    ],
  });
  const file = join(w.dir, "team.yaml");
  writeFileSync(file, stringify(configOf(false)));
  const d = await w.startDaemon({}, { configFile: file, waitStarted: false });
  const idOf = (pk: string) => pk.slice(0, 16);
  const logged = (pk: string, evt: string, pred: (l: Record<string, unknown>) => boolean = () => true) =>
    d.waitLog((l) => l.agent === idOf(pk) && l.evt === evt && pred(l));
  await logged(a!.pk, "channel.seated", (l) => l.channel === lobby);
  const refusedSeat = await logged(a!.pk, "channel.seat_refused", (l) => l.channel === vault);
  assert.match(String(refusedSeat.reason), /actor not authorized/);
  for (const ag of [a!, b!]) {
    await logged(ag.pk, "profile.published");
    await logged(ag.pk, "directory.published");
  }

  const read = async (viewer: Person, filters: object[]) => (await viewer.relay()).query(filters as never);
  const records = async (viewer: Person, agent: string, channel: string) => {
    const evs = await read(viewer, [
      { kinds: [39002], "#d": [channel] },
      { kinds: [0, 10100], authors: [agent] },
      { kinds: [30177], "#d": [agent] },
    ]);
    const newest = (k: number) => evs.filter((e) => e.kind === k).sort((x, y) => y.created_at - x.created_at)[0];
    return { roster: newest(39002), profile: newest(0), entry: newest(10100), managed: evs.filter((e) => e.kind === 30177) };
  };
  const offered = async (agent: string, channel: string, build: "oss" | "release" = "oss") => {
    const who: string[] = [];
    for (const [name, p] of [
      ["owner", w.owner],
      ["teammate", w.teammate],
      ["stranger", w.stranger],
    ] as const) {
      const r = await records(p, agent, channel);
      if (desktopOffers({ agent, relayKey: w.relay.relayPubkey, channel, channelType: "stream", ...r }, p.pk, build)) who.push(name);
    }
    return who;
  };

  // Exactly one profile and one entry per agent, as Desktop parses them.
  for (const ag of [a!, b!]) {
    const evs = await read(w.owner, [{ kinds: [0, 10100], authors: [ag.pk] }]);
    assert.deepEqual(
      evs.map((e) => e.kind).sort((x, y) => x - y),
      [0, 10100],
      "one profile and one entry",
    );
    const entry = evs.find((e) => e.kind === 10100)!;
    const profile = JSON.parse(evs.find((e) => e.kind === 0)!.content);
    assert.deepEqual(strictParseProblems(entry.content), []);
    assert.equal(JSON.parse(entry.content).name, profile.display_name, "the entry's name is the profile's display name");
  }
  const aEntry = JSON.parse((await records(w.owner, a!.pk, releases)).entry!.content);
  assert.equal(aEntry.x, 1, "a field the bridge does not own survives");
  assert.equal(aEntry.channel_add_policy, "anyone", "the add policy on the relay is kept");
  const aProfile = (await records(w.owner, a!.pk, releases)).profile!;
  assert.deepEqual(JSON.parse(aProfile.content), {
    name: "builder",
    display_name: "Builder",
    about: "builds",
    picture: "https://example.com/b.png",
  });
  assert.equal(nipOaOwner(a!.pk, aProfile), w.owner.pk, "the profile carries the owner's NIP-OA tag");
  assert.equal(
    JSON.parse((await records(w.owner, b!.pk, floor)).profile!.content).name,
    idOf(b!.pk),
    "a team agent's name defaults to its id",
  );

  assert.deepEqual(await offered(a!.pk, releases), ["owner", "teammate"]);
  assert.deepEqual(await offered(a!.pk, lobby), ["owner", "teammate"], "seated bot by itself; the gate still answers only the owner there");
  assert.deepEqual(await offered(a!.pk, vault), [], "not seated in the private channel");
  assert.deepEqual(await offered(b!.pk, floor), ["owner", "teammate", "stranger"]);
  assert.deepEqual(await offered(b!.pk, releases), [], "B sits in no such channel");

  // B is seated as bot in one more channel: its entry follows.
  const annex = await w.relay.createChannel({ name: "annex", type: "stream", members: people });
  const seatedAt = d.logs.length;
  await w.relay.addMember(annex, b!.pk, "bot");
  await d.waitLog(
    (l) => d.logs.indexOf(l) >= seatedAt && l.agent === idOf(b!.pk) && l.evt === "directory.published" && l.reason === "membership",
  );
  assert.ok(JSON.parse((await records(w.owner, b!.pk, annex)).entry!.content).channel_ids.includes(annex));
  assert.deepEqual(await offered(b!.pk, annex), ["owner", "teammate", "stranger"]);

  // A reload that allows the stranger in #releases republishes A's entry.
  const before = d.logs.length;
  writeFileSync(file, stringify(configOf(true)));
  d.proc.kill("SIGHUP");
  await d.waitLog(
    (l) => d.logs.indexOf(l) >= before && l.agent === idOf(a!.pk) && l.evt === "directory.published" && l.reason === "reload",
  );
  assert.deepEqual(await offered(a!.pk, releases), ["owner", "teammate", "stranger"]);

  // register: refusals first, then the owner's records.
  const agentKey = join(w.dir, "agent.nsec");
  writeFileSync(agentKey, `${a!.nsec}\n`, { mode: 0o600 });
  const strangerKey = join(w.dir, "stranger.nsec");
  writeFileSync(strangerKey, `${w.stranger.nsec}\n`, { mode: 0o600 });
  const ownerless = join(w.dir, "ownerless.yaml");
  writeFileSync(
    ownerless,
    stringify({ identity: { secret_key: b!.nsec }, relay: { url: w.relay.url }, agent: { command: "buzz-bridge", args: ["demo-agent"] } }),
  );
  for (const [key, cfg, why] of [
    [agentKey, file, /the agent's own key/],
    [strangerKey, file, /is not the owner the config names/],
    [ownerKey, ownerless, /names no owner/],
  ] as const) {
    const r = await runCli(["register", "--owner-key", key, "-c", cfg]);
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, why);
  }
  assert.deepEqual(await read(w.owner, [{ kinds: [30177] }]), [], "nothing published by a refused register");
  assert.deepEqual(await offered(a!.pk, releases, "release"), [], "release builds: no owner record yet");

  const reg = await runCli(["register", "--owner-key", ownerKey, "-c", file]);
  assert.equal(reg.status, 0, reg.stderr);
  assert.ok(!reg.stdout.includes(w.owner.nsec) && !reg.stderr.includes(w.owner.nsec));
  const managed = await read(w.owner, [{ kinds: [30177] }]);
  assert.deepEqual(
    managed.map((e) => [e.pubkey, e.tags.find((t) => t[0] === "d")?.[1]]).sort(),
    [
      [w.owner.pk, a!.pk],
      [w.owner.pk, b!.pk],
    ].sort(),
  );
  for (const e of managed) {
    const c = JSON.parse(e.content);
    assert.equal(typeof c.parallelism, "number");
    assert.ok(["anyone", "allowlist"].includes(c.respond_to));
  }
  assert.deepEqual(await offered(a!.pk, releases, "release"), ["owner", "teammate", "stranger"], "attested and registered");
  assert.deepEqual(await offered(b!.pk, floor, "release"), [], "registered but its profile names no owner");

  // doctor: who can @-mention each agent where, from the relay.
  const doc = await runCli(["doctor", "-c", file]);
  assert.match(doc.stdout, /#releases: owner, .+ \(allowlist\) — ok/);
  assert.match(doc.stdout, new RegExp(`#${vault}: nobody: the agent is not a member; a member must add it with role bot`));
  assert.match(doc.stdout, /#floor: anyone in the channel \(anyone\) — ok/);
  assert.match(doc.stdout, /release builds: owner record by npub1\S+ — ok/);
  assert.match(doc.stdout, /release builds: the profile carries no owner \(NIP-OA\) tag/);
  assert.match(doc.stdout, /directory entry: as this config writes it — ok/);

  // A relay that refuses A's entry and its seat: a reload adds #den (A seated bot by an admin)
  // and #yard (open, A not a member); the entry naming #den and the seat in #yard are refused.
  refusing = true;
  const den = await w.relay.createChannel({ name: "den", type: "stream", members: people });
  const yard = await w.relay.createChannel({ name: "yard", type: "stream", members: people });
  await w.relay.addMember(den, a!.pk, "bot");
  await logged(a!.pk, "relay.channel_joined", (l) => l.channel === den);
  const reloadAt = d.logs.length;
  const since = (l: Record<string, unknown>) => d.logs.indexOf(l) >= reloadAt;
  writeFileSync(
    file,
    stringify(
      configOf(true, [
        { id: den, respond_to: "owner-only" },
        { id: yard, respond_to: "owner-only" },
      ]),
    ),
  );
  d.proc.kill("SIGHUP");
  const dirRefused = await logged(a!.pk, "directory.refused", since);
  assert.match(String(dirRefused.reason), /takes no agent records/, "the relay's reason is logged");
  const seatRefused = await logged(a!.pk, "channel.seat_refused", (l) => since(l) && l.channel === yard);
  assert.match(String(seatRefused.reason), /takes no agent records/);
  assert.deepEqual(
    [...refused].sort((x, y) => x - y),
    [9000, 10100],
    "the relay was asked for the entry and the seat once each",
  );
  const standing = JSON.parse((await records(w.owner, a!.pk, den)).entry!.content);
  assert.ok(!standing.channel_ids.includes(den), "the entry on the relay is the earlier one");
  const yardRoster = (await records(w.owner, a!.pk, yard)).roster;
  assert.ok(!yardRoster?.tags.some((t) => t[0] === "p" && t[1] === a!.pk), "A has no seat in #yard");

  // Still answering: the owner's mention in #den gets exactly one reply.
  const ask = await w.owner.post("@Builder are you there?", { channel: den });
  await w.waitReply(ask);
  assert.equal(d.proc.exitCode, null);

  // doctor shows both refusals from the records as they stand.
  const after2 = await runCli(["doctor", "-c", file]);
  assert.match(after2.stdout, /#den: owner, .+ — ok; not in the directory entry on the relay \(older Desktop builds leave it out\)/);
  assert.match(
    after2.stdout,
    new RegExp(
      `directory entry: the relay's is not what this config writes \\(it does not list #den, #${yard}\\) — .*the relay refused it \\(directory\\.refused`,
    ),
  );
  assert.match(after2.stdout, new RegExp(`#${yard}: nobody: the agent is not a member; a member must add it with role bot`));
});
