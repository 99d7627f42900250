/**
 * The records Buzz Desktop reads (docs/protocol.md "Buzz Desktop"), in process: the
 * directory entry built from every respond_to config survives older Desktops' strict parse
 * and never says `nobody`; the read-merge keeps fields others own and replaces malformed
 * records; the profile merge attaches the NIP-OA tag; bad profile input is a config error
 * naming the key; the dev relay seats and refuses as Buzz's relay does; doctor names what the
 * entry on the relay lacks against the config (a refused or unpublished entry).
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { finalizeEvent, generateSecretKey, getPublicKey, nip19, type Event } from "nostr-tools";
import { ConfigError, loadConfigText } from "../../src/config/load.js";
import { planReload } from "../../src/config/reload.js";
import { desktopAgent, desktopAudience } from "../../src/buzz/desktop-view.js";
import { mergeDirectory, mergeProfile } from "../../src/nostr/agent-records.js";
import { AgentRecords, directoryAudience, type RecordsRelay } from "../../src/buzz/agent-records.js";
import type { ChannelInfo } from "../../src/buzz/directory.js";
import { signAttestation } from "../../src/config/nip-oa.js";
import { startDevRelay, type DevRelay } from "../../src/devrelay/index.js";
import { RelayClient } from "../../src/relay/index.js";
import { createLogger } from "../../src/base/log.js";
import { strictParseProblems } from "../fixtures/desktop.js";

const agentSk = generateSecretKey();
const agentPk = getPublicKey(agentSk);
const nsec = nip19.nsecEncode(agentSk);
const ownerSk = generateSecretKey();
const OWNER = getPublicKey(ownerSk);
const ALICE = "B".repeat(64);

function load(extra: string) {
  return loadConfigText(`identity:\n  secret_key: ${nsec}\n  owner: ${OWNER}\n${extra}relay:\n  url: ws://127.0.0.1:7777\n`, "t.yaml", {});
}

const signed = (kind: number, content: string, tags: string[][] = []): Event =>
  finalizeEvent({ kind, created_at: 1_800_000_000, tags, content }, agentSk);

test("every respond_to config gives an entry older Desktops parse, naming no nobody", () => {
  const modes = ["owner-only", "allowlist", "anyone", "nobody"] as const;
  for (const a of modes)
    for (const b of modes)
      for (const owner of [OWNER, undefined]) {
        const { config } = load(
          `channels:\n  - id: 11111111-1111-4111-8111-111111111111\n    respond_to: ${a}\n    allow: [${ALICE}]\n  - id: 22222222-2222-4222-8222-222222222222\n    respond_to: ${b}\n`,
        );
        const chans = config.channels.map((c) => ({ id: c.id, type: "stream" as const }));
        const audience = directoryAudience(config, chans, owner);
        const { template } = mergeDirectory(undefined, { name: "agent", ...audience });
        const what = `${a}/${b}/${owner ? "owner" : "no owner"}`;
        assert.deepEqual(strictParseProblems(template!.content), [], what);
        const c = JSON.parse(template!.content) as Record<string, unknown>;
        assert.ok(["anyone", "allowlist"].includes(c.respond_to as string), what);
        assert.ok(
          (c.respond_to_allowlist as string[]).every((k) => /^[0-9a-f]{64}$/.test(k)),
          `${what}: lowercase hex`,
        );
        const ids = c.channel_ids as string[];
        assert.equal(ids.includes("11111111-1111-4111-8111-111111111111"), a !== "nobody", what);
        assert.equal(ids.includes("22222222-2222-4222-8222-222222222222"), b !== "nobody", what);
        if (a === "allowlist" && b !== "anyone") assert.ok((c.respond_to_allowlist as string[]).includes(ALICE.toLowerCase()), what);
        if (a === "owner-only" && b === "owner-only" && owner) assert.deepEqual(c.respond_to_allowlist, [OWNER], what);
        assert.equal(c.channel_add_policy, "owner_only", `${what}: a policy is written when there was none`);
      }
});

test("the merge keeps channel_add_policy and unknown fields; an unchanged entry is not published again", () => {
  const fields = { name: "Builder", respond_to: "allowlist" as const, respond_to_allowlist: [OWNER], channel_ids: ["c1"] };
  const existing = signed(10100, JSON.stringify({ channel_add_policy: "anyone", x: 1 }));
  const m = mergeDirectory(existing, fields);
  assert.deepEqual(m.problems, []);
  const c = JSON.parse(m.template!.content);
  assert.equal(c.channel_add_policy, "anyone");
  assert.equal(c.x, 1);
  assert.equal(c.name, "Builder");
  const again = mergeDirectory(signed(10100, m.template!.content), fields);
  assert.equal(again.template, undefined, "nothing to publish");
});

test("a malformed entry on the relay is replaced by a well-formed merge, each problem named", () => {
  const fields = { name: "Builder", respond_to: "anyone" as const, respond_to_allowlist: [], channel_ids: ["c1"] };
  for (const [text, problem] of [
    ["not json", /not JSON/],
    ["[1,2]", /array/],
    [JSON.stringify({ respond_to: "nobody", channel_ids: [1], keep: "me", channel_add_policy: "nobody" }), /respond_to/],
  ] as const) {
    const m = mergeDirectory(signed(10100, text), fields);
    assert.match(m.problems.join("; "), problem);
    assert.deepEqual(strictParseProblems(m.template!.content), []);
    if (text.startsWith("{")) {
      const c = JSON.parse(m.template!.content);
      assert.equal(c.keep, "me", "valid unknown fields kept");
      assert.equal(c.channel_add_policy, "nobody");
    }
  }
});

test("the profile merge keeps others' fields and attaches the configured NIP-OA tag", () => {
  const tag = signAttestation(ownerSk, agentPk);
  const existing = signed(0, JSON.stringify({ name: "old", nip05: "bot@example.com" }), [["auth", "x", "", "y"]]);
  const m = mergeProfile(existing, { display_name: "Builder", about: "builds" }, "agent", tag);
  const c = JSON.parse(m.template!.content);
  assert.deepEqual([c.name, c.display_name, c.about, c.nip05], ["old", "Builder", "builds", "bot@example.com"], "the relay's name is kept");
  assert.equal(m.displayName, "Builder");
  assert.deepEqual(
    m.template!.tags.filter((t) => t[0] === "auth"),
    [tag],
  );
  const fresh = mergeProfile(undefined, {}, "0123456789abcdef");
  assert.deepEqual(
    JSON.parse(fresh.template!.content),
    { name: "0123456789abcdef", display_name: "0123456789abcdef" },
    "defaults where nothing is set",
  );
  const again = mergeProfile(signed(0, fresh.template!.content), {}, "0123456789abcdef");
  assert.equal(again.template, undefined, "an unchanged profile is not published again");
  assert.equal(again.displayName, "0123456789abcdef");
});

test("a picture that is not https, or a profile too large for the relay, is a config error naming the key", () => {
  assert.throws(
    () => load("  profile:\n    picture: http://example.com/a.png\n"),
    (e: unknown) => e instanceof ConfigError && /identity\.profile\.picture/.test(e.message) && /https/.test(e.message),
  );
  assert.throws(
    () => load(`  profile:\n    about: ${"x".repeat(300_000)}\n`),
    (e: unknown) => e instanceof ConfigError && /identity\.profile/.test(e.message) && /larger than a Buzz relay accepts/.test(e.message),
  );
  assert.equal(load("  profile:\n    picture: https://example.com/a.png\n").config.identity.profile?.picture, "https://example.com/a.png");
});

let relay: DevRelay | undefined;
const clients: RelayClient[] = [];
after(async () => {
  for (const c of clients) c.stop();
  await relay?.close();
});

test("the dev relay seats as Buzz's does: bot self-add in an open channel, refused in a private one, role changes by owner/admin only", async () => {
  relay = await startDevRelay({ port: 0, noLimits: true });
  const member = generateSecretKey();
  const admin = generateSecretKey();
  const open = await relay.createChannel({ name: "open", type: "stream", members: [getPublicKey(member)] });
  const closed = await relay.createChannel({ name: "closed", type: "private", members: [getPublicKey(member)] });
  await relay.addMember(open, getPublicKey(admin), "admin");
  relay.addRelayMember(agentPk);
  const client = (sk: Uint8Array) => {
    const c = new RelayClient({ url: relay!.url, secretKey: sk, logger: createLogger({ level: "silent" }) });
    clients.push(c);
    return c;
  };
  const agent = client(agentSk);
  await agent.start();
  const seat = (ch: string, role: string, by = agent, who = agentPk) =>
    by.send({
      kind: 9000,
      created_at: Math.floor(Date.now() / 1000),
      content: "",
      tags: [
        ["h", ch],
        ["p", who],
        ["role", role],
      ],
    });
  const roleIn = async (ch: string, c: RelayClient) => {
    const [roster] = await c.query([{ kinds: [39002], "#d": [ch] }]);
    return roster?.tags.find((t) => t[0] === "p" && t[1] === agentPk)?.[3];
  };

  assert.equal((await seat(open, "bot")).outcome.status, "accepted");
  assert.equal(await roleIn(open, agent), "bot");
  const refused = (await seat(closed, "bot")).outcome;
  assert.equal(refused.status, "refused");
  assert.match(refused.reason!, /actor not authorized/);

  const m = client(member);
  await m.start();
  const byMember = (await seat(open, "member", m)).outcome;
  assert.match(byMember.reason ?? "", /only owners\/admins may change an active member's role/);
  const a = client(admin);
  await a.start();
  assert.equal((await seat(open, "member", a)).outcome.status, "accepted");
  assert.equal(await roleIn(open, m), "member");

  // A third-party add obeys the agent's channel_add_policy; the agent's own seat does not.
  await agent.send({
    kind: 10100,
    created_at: Math.floor(Date.now() / 1000),
    tags: [],
    content: JSON.stringify({ channel_add_policy: "owner_only" }),
  });
  const other = await relay.createChannel({ name: "other", type: "stream", members: [getPublicKey(member)] });
  assert.match((await seat(other, "bot", m)).outcome.reason ?? "", /owner_only/);
  assert.equal((await seat(other, "bot")).outcome.status, "accepted");
});

test("the agent's channels changing while the start's records are out cost no second read or publish when nothing changed", async () => {
  const CH = "33333333-3333-4333-8333-333333333333";
  let { config } = load(`channels:\n  - id: ${CH}\n    respond_to: owner-only\n`);
  // A relay in process that keeps what it takes and answers reads from it; the first read waits for the test.
  const kept: Event[] = [];
  let reads = 0;
  let releaseRead!: () => void;
  const readHeld = new Promise<void>((r) => (releaseRead = r));
  const relay: RecordsRelay = {
    async query() {
      if (++reads === 1) await readHeld;
      return [...kept];
    },
    async send(tpl) {
      const event = finalizeEvent(tpl, agentSk);
      kept.push(event);
      return { event, outcome: { status: "accepted" } };
    },
  };
  let joined: ChannelInfo[] = [];
  const records = new AgentRecords({
    relay,
    pubkey: agentPk,
    config: () => config,
    joined: () => joined,
    logger: createLogger({ level: "silent" }),
  });
  const start = records.sync("start");
  // The directory learns the channel (its type, the agent a member) while the start's read is out.
  joined = [{ id: CH, name: "c", about: "", type: "stream", archived: false, members: [agentPk] }];
  const membership = records.sync("membership");
  releaseRead();
  await Promise.all([start, membership]);
  assert.deepEqual(
    kept.map((e) => e.kind),
    [0, 10100],
    "one profile and one directory entry: the change left what the entry says as it was",
  );
  assert.equal(reads, 1, "the membership change after the start read nothing again");
  // A change that does alter the entry is published (the channel answers nobody now: no channel in the entry).
  ({ config } = load(`channels:\n  - id: ${CH}\n    respond_to: nobody\n`));
  await records.sync("membership");
  assert.deepEqual(
    kept.map((e) => e.kind),
    [0, 10100, 10100],
  );
  assert.deepEqual(JSON.parse(kept[2]!.content).channel_ids, []);
});

test("a reload applies a changed profile or directory switch at once (they are republished), needing no restart", () => {
  const running = load("  profile:\n    name: builder\n");
  const plan = planReload(running, load("  profile:\n    name: shipper\n  directory: off\n"));
  assert.ok(plan.ok);
  assert.deepEqual(plan.needsRestart, []);
  assert.equal(plan.config.identity.profile?.name, "shipper");
  assert.equal(plan.config.identity.directory, "off");
});

test("doctor's reading of Desktop: a member seat, a DM, no entry and a release build each say what is missing", () => {
  const entry = signed(10100, JSON.stringify({ respond_to: "allowlist", respond_to_allowlist: [OWNER] }));
  const view = desktopAgent(agentPk, { entry, managed: [] });
  assert.deepEqual(view, { source: "10100", attestedBy: undefined, respondTo: "allowlist", allowlist: [OWNER] });
  assert.deepEqual(desktopAudience(view, { type: "stream", role: "bot" }, "oss"), { who: "list", keys: [OWNER] });
  assert.match(
    JSON.stringify(desktopAudience(view, { type: "stream", role: "member" }, "oss")),
    /sits as member; an admin must seat it as bot/,
  );
  assert.match(JSON.stringify(desktopAudience(view, { type: "private", role: undefined }, "oss")), /not a member/);
  assert.match(JSON.stringify(desktopAudience(view, { type: "dm", role: "bot" }, "oss")), /DMs/);
  assert.match(JSON.stringify(desktopAudience(view, { type: "stream", role: "bot" }, "release")), /run buzz-bridge register/);
  const none = desktopAgent(agentPk, { managed: [] });
  assert.match(JSON.stringify(desktopAudience(none, { type: "stream", role: "bot" }, "oss")), /no directory entry/);
  // owner-only in a 10100 admits nobody: Desktop learns no owner from it.
  const ownerOnly = desktopAgent(agentPk, { entry: signed(10100, JSON.stringify({ respond_to: "owner-only" })), managed: [] });
  assert.equal(desktopAudience(ownerOnly, { type: "stream", role: "bot" }, "oss").who, "nobody");
  // With the owner's tag on the profile and their 30177, the owner is known and the 30177 decides.
  const profile = signed(0, "{}", [signAttestation(ownerSk, agentPk)]);
  const managed = finalizeEvent(
    {
      kind: 30177,
      created_at: 1_800_000_000,
      tags: [["d", agentPk]],
      content: JSON.stringify({ name: "a", respond_to: "owner-only", parallelism: 1 }),
    },
    ownerSk,
  );
  const owned = desktopAgent(agentPk, { profile, entry, managed: [managed] });
  assert.equal(owned.owner, OWNER);
  assert.deepEqual(desktopAudience(owned, { type: "stream", role: "bot" }, "release"), { who: "list", keys: [OWNER] });
});

test("doctor's mentionable line names what the relay's entry lacks against the config, and why (a refused or unpublished entry)", async () => {
  const { matchFilters } = await import("nostr-tools/filter");
  const { mentionableCheck } = await import("../../src/app/doctor/doctor-mentionable.js");
  const [one, two] = ["11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"];
  const loaded = load(`channels:\n  - id: ${one}\n    respond_to: anyone\n  - id: ${two}\n    respond_to: owner-only\n`);
  const found = [one, two].map((id, i) => ({
    id,
    name: `ch${i + 1}`,
    about: "",
    type: "stream" as const,
    archived: false,
    members: [agentPk],
  }));
  const reader = (events: Event[]) => ({ query: async (filters: object[]) => events.filter((e) => matchFilters(filters as never, e)) });
  const lines = async (events: Event[]) => (await mentionableCheck(reader(events), loaded, found)).details ?? [];

  const none = await lines([]);
  assert.ok(
    none.some((l) => /^directory entry: none on the relay — .*the relay refused it \(directory\.refused/.test(l)),
    none.join("\n"),
  );
  // The entry the relay kept when it refused the daemon's next one: it lists one channel, allowlist.
  const stale = signed(10100, JSON.stringify({ respond_to: "allowlist", respond_to_allowlist: [OWNER], channel_ids: [one] }));
  const older = await lines([stale]);
  assert.ok(
    older.includes(
      `directory entry: the relay's is not what this config writes (it does not list #ch2; respond_to allowlist where the config writes anyone) — the daemon has not published it since (is it running?) or the relay refused it (directory.refused in the daemon's log says why)`,
    ),
    older.join("\n"),
  );
  assert.ok(
    older.some(
      (l) => l.startsWith("#ch2: ") && l.endsWith("; not in the directory entry on the relay (older Desktop builds leave it out)"),
    ),
  );
  assert.ok(!older.some((l) => l.startsWith("#ch1: ") && l.includes("not in the directory entry")));
  const current = signed(10100, JSON.stringify({ respond_to: "anyone", respond_to_allowlist: [], channel_ids: [one, two] }));
  assert.ok((await lines([current])).includes("directory entry: as this config writes it — ok"));
  const off = load(`  directory: off\nchannels:\n  - id: ${one}\n`);
  assert.ok(!((await mentionableCheck(reader([]), off, found)).details ?? []).some((l) => l.startsWith("directory entry")));
});
