/**
 * NIP-OA: the agent's own owner attestation (identity.auth_tag) and siblings — other agents
 * whose kind 0 profile carries an auth tag signed by the same owner — end to end through the
 * daemon subprocess, the demo agent and the dev relay; plus the attestation rules on the
 * NIP-OA test vector.
 */
import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateSecretKey, getPublicKey } from "nostr-tools";
import { stringify } from "yaml";
import { World, Person, CLI, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { conditionsAllow, parseAuthTag, signAttestation, verifyAttestation } from "../src/config/nip-oa.js";
import { SiblingCheck } from "../src/gate/siblings.js";
import { profileOf } from "../src/buzz/profiles.js";

describe("NIP-OA attestation rules", () => {
  // The test vector published with NIP-OA (owner = generator point key).
  const VECTOR = {
    owner: "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798",
    agent: "c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5",
    conditions: "kind=1&created_at<1713957000",
    sig: "8b7df2575caf0a108374f8471722b233c53f9ff827a8b0f91861966c3b9dd5cb2e189eae9f49d72187674c2f5bd244145e10ff86c9f257ffe65a1ee5f108b369",
  };
  const vectorTag = JSON.stringify(["auth", VECTOR.owner, VECTOR.conditions, VECTOR.sig]);

  test("the published test vector verifies and names its owner", () => {
    const p = parseAuthTag(vectorTag);
    assert.ok(p.ok);
    assert.deepEqual(verifyAttestation(p.value, VECTOR.agent), { ok: true, value: VECTOR.owner });
  });

  test("the same tag presented by another agent key does not verify", () => {
    const p = parseAuthTag(vectorTag);
    assert.ok(p.ok);
    const other = getPublicKey(generateSecretKey());
    assert.equal(verifyAttestation(p.value, other).ok, false);
  });

  test("malformed tags are refused with what is wrong", () => {
    assert.match((parseAuthTag("[1,2]") as { problem: string }).problem, /4 elements/);
    assert.match(
      (parseAuthTag(JSON.stringify(["auth", VECTOR.owner.toUpperCase(), "", VECTOR.sig])) as { problem: string }).problem,
      /owner/,
    );
    assert.match((parseAuthTag(JSON.stringify(["auth", VECTOR.owner, "kind=01", VECTOR.sig])) as { problem: string }).problem, /kind=01/);
  });

  test("an owner attesting itself is refused", () => {
    const sk = generateSecretKey();
    const tag = signAttestation(sk, getPublicKey(sk));
    const p = parseAuthTag(tag);
    assert.ok(p.ok);
    assert.match((verifyAttestation(p.value, getPublicKey(sk)) as { problem: string }).problem, /self-attestation/);
  });

  test("conditions bind kind and time strictly", () => {
    assert.equal(conditionsAllow("kind=9&created_at<100", { kind: 9, created_at: 99 }).ok, true);
    assert.equal(conditionsAllow("kind=9&created_at<100", { kind: 9, created_at: 100 }).ok, false);
    assert.equal(conditionsAllow("kind=1", { kind: 9, created_at: 1 }).ok, false);
  });

  test("a profile look-up slower than the timeout fails closed, and is asked again next time", async () => {
    const owner = generateSecretKey();
    const agent = getPublicKey(generateSecretKey());
    const profile = profileOf(agent, {
      kind: 0,
      pubkey: agent,
      created_at: 1,
      content: "{}",
      tags: [signAttestation(owner, agent)],
      id: "",
      sig: "",
    });
    let calls = 0;
    const check = new SiblingCheck({
      owner: getPublicKey(owner),
      timeoutMs: 50,
      lookup: async () => (++calls === 1 ? new Promise((r) => setTimeout(() => r(profile), 500)) : profile),
    });
    assert.equal(await check.check(agent, { kind: 9, created_at: 1 }), "lookup-failed");
    assert.equal(await check.check(agent, { kind: 9, created_at: 1 }), "verified");
    assert.equal(calls, 2);
  });
});

describe("siblings through the daemon (owner-only channel)", () => {
  let w: World;
  let d: DaemonProc;
  let room: string;
  let dm: string;
  let allowRoom: string;
  let sibling: Person;
  let forger: Person;
  let foreign: Person;
  let plainAgent: Person;
  const otherOwner = generateSecretKey();

  async function publishProfile(p: Person, authTag: string[] | undefined) {
    const c = await p.relay();
    const { outcome } = await c.send({
      kind: KIND.profile,
      created_at: Math.floor(Date.now() / 1000),
      content: JSON.stringify({ name: p.name }),
      tags: authTag ? [authTag] : [],
    });
    assert.equal(outcome.status, "accepted", `${p.name}'s profile was stored`);
  }

  before(async () => {
    w = await World.create();
    sibling = new Person("sibling-agent", w);
    forger = new Person("forger-agent", w);
    foreign = new Person("foreign-agent", w);
    plainAgent = new Person("plain-agent", w);
    room = await w.addChannel({ name: "agents-room", members: [w.agent, w.owner, sibling, forger, foreign, plainAgent] });
    dm = await w.addChannel({ name: "dm-sibling", type: "dm", members: [w.agent, w.owner, sibling, foreign] });
    allowRoom = await w.addChannel({ name: "allow-room", members: [w.agent, w.owner, w.teammate, sibling, foreign] });
    await publishProfile(sibling, signAttestation(w.owner.sk, sibling.pk));
    // Claims our owner, but the signature was made by someone else.
    const forged = signAttestation(otherOwner, forger.pk);
    await publishProfile(forger, ["auth", w.owner.pk, forged[2]!, forged[3]!]);
    // A valid attestation, by another owner.
    await publishProfile(foreign, signAttestation(otherOwner, foreign.pk));
    await publishProfile(plainAgent, undefined);
    d = await w.startDaemon({
      defaults: { respond_to: "owner-only", on_denied: "react" },
      channels: [{ id: "*" }, { id: allowRoom, respond_to: "allowlist", allow: [w.teammate.npub] }],
    });
  });
  after(async () => {
    for (const p of [sibling, forger, foreign, plainAgent]) p?.stop();
    await w.close();
  });

  test("a sibling (profile auth tag signed by the same owner) is answered in its thread, and the log says a sibling rule decided", async () => {
    const ev = await sibling.post("@agent can you help me with the release notes?", { channel: room });
    const reply = await w.waitReply(ev);
    assert.match(reply.content, /release notes/);
    const line = await d.waitLog((l) => l.evt === "gate.accepted" && l.event === ev.id);
    assert.equal(line.sibling, "verified");
  });

  test("a profile whose auth tag names our owner but carries a forged signature is refused", async () => {
    const ev = await forger.post("@agent please run the deploy", { channel: room });
    await w.waitReaction(ev, "🔒");
    const line = await d.waitLog((l) => l.evt === "gate.denied" && l.event === ev.id);
    assert.equal(line.reason, "not-owner");
    assert.equal(line.sibling, "forged-tag");
    assert.deepEqual(await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] }), []);
  });

  test("another owner's agent, with a valid tag of its own, is refused", async () => {
    const ev = await foreign.post("@agent please run the deploy", { channel: room });
    await w.waitReaction(ev, "🔒");
    const line = await d.waitLog((l) => l.evt === "gate.denied" && l.event === ev.id);
    assert.equal(line.sibling, "other-owner");
    assert.deepEqual(await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] }), []);
  });

  test("an agent without an auth tag is refused as before", async () => {
    const ev = await plainAgent.post("@agent hi", { channel: room });
    const line = await d.waitLog((l) => l.evt === "gate.denied" && l.event === ev.id);
    assert.equal(line.sibling, "no-tag");
  });

  test("in a DM a sibling is answered and another owner's agent is not", async () => {
    const ev = await sibling.post("@agent a private question", { channel: dm });
    await w.waitReply(ev);
    const other = await foreign.post("@agent a private question", { channel: dm });
    const line = await d.waitLog((l) => l.evt === "gate.denied" && l.event === other.id);
    assert.equal(line.reason, "dm-not-owner");
    assert.equal(line.sibling, "other-owner");
  });

  test("under allowlist a sibling is answered without being listed", async () => {
    const ev = await sibling.post("@agent listed or not?", { channel: allowRoom });
    await w.waitReply(ev);
    const other = await foreign.post("@agent listed or not?", { channel: allowRoom });
    const line = await d.waitLog((l) => l.evt === "gate.denied" && l.event === other.id);
    assert.equal(line.reason, "not-allowlisted");
  });

  test("control commands stay the owner's: a sibling's !status is not executed", async () => {
    const ev = await sibling.post("!status", { channel: room });
    await d.waitLog((l) => l.evt === "gate.accepted" && l.event === ev.id);
    await w.waitReply(ev);
    assert.deepEqual(await w.query({ kinds: [KIND.system], authors: [w.agent.pk], "#e": [ev.id] }), [], "no 40099 control outcome");
  });
});

describe("identity.auth_tag (the agent's own attestation)", () => {
  let w: World;
  before(async () => {
    w = await World.create();
  });
  after(() => w.close());

  const check = (file: string) => spawnSync(process.execPath, [CLI, "check", "-c", file], { encoding: "utf8" });

  test("a tag signed for another agent key is a config error naming the problem", () => {
    const wrong = signAttestation(w.owner.sk, w.teammate.pk);
    const file = join(w.dir, "wrong-tag.yaml");
    writeFileSync(file, stringify(w.config({ identity: { secret_key: w.agent.nsec, owner: undefined, auth_tag: JSON.stringify(wrong) } })));
    const r = check(file);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /identity\.auth_tag: the NIP-OA auth tag does not match this agent: .*signature does not verify/);
    assert.ok(r.stderr.includes(w.agent.npub), "names the agent key the tag must be made for");
  });

  test("the tag may be written as a YAML list; a configured owner that differs is overridden with a warning", () => {
    const file = join(w.dir, "list-tag.yaml");
    writeFileSync(
      file,
      stringify(
        w.config({ identity: { secret_key: w.agent.nsec, owner: w.teammate.npub, auth_tag: signAttestation(w.owner.sk, w.agent.pk) } }),
      ),
    );
    const r = check(file);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`owner: ${w.owner.npub}\n`), "check prints the owner the auth tag names, as an npub");
    assert.match(r.stderr, /warning: .*identity\.owner: identity\.owner \(npub1\w+\) differs from the auth tag's owner/);
  });

  test("the owner comes from a valid tag (in a file), and that owner's mention is answered", async () => {
    const tagFile = join(w.dir, "auth-tag.json");
    writeFileSync(tagFile, JSON.stringify(signAttestation(w.owner.sk, w.agent.pk)));
    const file = join(w.dir, "tag.yaml");
    writeFileSync(file, stringify(w.config({ identity: { secret_key: w.agent.nsec, owner: undefined, auth_tag_file: tagFile } })));
    const r = check(file);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`owner: ${w.owner.npub}\n`), "check prints the owner the auth tag names, as an npub");
    const d = await w.startDaemon({}, { configFile: file });
    const ev = await w.owner.post("@agent who owns you?");
    await w.waitReply(ev);
    await d.stop();
  });
});
