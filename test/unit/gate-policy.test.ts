/**
 * The respond-to matrix: every mode × (owner, allowlisted teammate by npub, stranger) ×
 * (channel, DM), with the decision and the one gate.denied log line a refusal produces.
 */
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { verifyEvent, type Event } from "nostr-tools";
import { decide, type GateContext } from "../../src/gate/decide.js";
import { DeniedReporter } from "../../src/gate/denied.js";
import { authorAllowed, type ChannelInfo } from "../../src/gate/policy.js";
import type { Config } from "../../src/config/schema.js";
import {
  agent,
  owner,
  teammate,
  stranger,
  CHANNEL,
  DM,
  mention,
  fromWire,
  makeConfig,
  captureLogger,
  type Person,
} from "../../kit/queue-helpers.js";

const DIRECTORY: Record<string, ChannelInfo> = {
  [CHANNEL]: { id: CHANNEL, name: "general", type: "stream" },
  [DM]: { id: DM, name: "dm", type: "dm" },
};

function context(config: Config, verified: Event[] = []): GateContext {
  return {
    self: agent.pk,
    owner: owner.pk,
    config,
    channel: (id) => DIRECTORY[id],
    handled: () => false,
    verify: (ev) => {
      verified.push(ev);
      return verifyEvent(ev);
    },
  };
}

type Mode = "owner-only" | "allowlist" | "anyone" | "nobody";
const who: Record<string, Person> = { owner, teammate, stranger };

// expected[mode][author] = [channel result, DM result]; "accept" or the denial reason.
const expected: Record<Mode, Record<string, [string, string]>> = {
  "owner-only": { owner: ["accept", "accept"], teammate: ["not-owner", "dm-not-owner"], stranger: ["not-owner", "dm-not-owner"] },
  allowlist: { owner: ["accept", "accept"], teammate: ["accept", "dm-not-owner"], stranger: ["not-allowlisted", "dm-not-owner"] },
  anyone: { owner: ["accept", "accept"], teammate: ["accept", "dm-not-owner"], stranger: ["accept", "dm-not-owner"] },
  nobody: { owner: ["nobody", "nobody"], teammate: ["nobody", "nobody"], stranger: ["nobody", "nobody"] },
};

describe("respond-to matrix (defaults apply; DMs hardened)", () => {
  for (const mode of Object.keys(expected) as Mode[]) {
    for (const name of Object.keys(who)) {
      for (const [i, channel] of [CHANNEL, DM].entries()) {
        const want = expected[mode][name]![i]!;
        test(`${mode} × ${name} × ${i ? "DM" : "channel"} → ${want}`, async () => {
          // The teammate is allowlisted by npub: the config normalises it to hex.
          const config = makeConfig({ defaults: { respond_to: mode, allow: [teammate.npub], on_denied: "silent" } });
          const { logger, lines } = captureLogger();
          const verified: Event[] = [];
          const ev = fromWire(mention(who[name]!, "hello agent", { channel }));
          const decision = decide(ev, context(config, verified));
          if (want === "accept") {
            assert.equal(decision.action, "accept");
            assert.equal(verified.length, 1, "an accepted event's signature is verified");
            return;
          }
          assert.equal(decision.action, "deny");
          assert.ok(decision.action === "deny");
          assert.equal(decision.reason, want);
          assert.equal(verified.length, 0, "a denied event is never verified");
          await new DeniedReporter({
            logger,
            publish: async () => assert.fail("silent publishes nothing"),
            verify: (e) => (verified.push(e), verifyEvent(e)),
          }).report(ev, decision);
          const denied = lines.filter((l) => l.evt === "gate.denied");
          assert.equal(denied.length, 1);
          assert.deepEqual(
            {
              level: denied[0]!.level,
              reason: denied[0]!.reason,
              author: denied[0]!.author,
              channel: denied[0]!.channel,
              event: denied[0]!.event,
            },
            { level: "info", reason: want, author: who[name]!.npub, channel, event: ev.id },
          );
        });
      }
    }
  }
});

describe("DM hardening", () => {
  test("a channel ENTRY that sets respond_to opens its DM to the policy", () => {
    const config = makeConfig({ channels: [{ id: CHANNEL }, { id: DM, respond_to: "anyone" }] });
    const d = decide(fromWire(mention(stranger, "hi", { channel: DM })), context(config));
    assert.equal(d.action, "accept");
  });

  test("a channel entry that sets allow opens its DM to the allowlist only", () => {
    const config = makeConfig({ defaults: { respond_to: "allowlist" }, channels: [{ id: DM, allow: [teammate.npub] }] });
    assert.equal(decide(fromWire(mention(teammate, "hi", { channel: DM })), context(config)).action, "accept");
    const s = decide(fromWire(mention(stranger, "hi", { channel: DM })), context(config));
    assert.equal(s.action === "deny" && s.reason, "not-allowlisted");
  });

  test("a channel of unknown type (metadata missing) is treated as a DM", () => {
    const unknown = "6f1c2a4e-0000-4000-8000-0000000000ff";
    const config = makeConfig({ defaults: { respond_to: "anyone" }, channels: [{ id: unknown }] });
    const d = decide(fromWire(mention(teammate, "hi", { channel: unknown })), context(config));
    assert.equal(d.action === "deny" && d.reason, "dm-not-owner");
  });
});

describe("drops before the policy", () => {
  const config = makeConfig({ defaults: { respond_to: "anyone" } });

  test("own events, unconfigured channels, other kinds and missing mentions are dropped unverified", () => {
    const verified: Event[] = [];
    const ctx = context(config, verified);
    const cases: [Event, string, string][] = [
      [mention(agent, "my own reply"), "own-event", "debug"],
      [mention(owner, "elsewhere", { channel: "6f1c2a4e-0000-4000-8000-00000000beef" }), "not-configured", "debug"],
      [mention(owner, "a reaction", { kind: 7 }), "kind-not-subscribed", "info"],
      // Under participation (on by default) the relay delivers all chatter: dropped at debug.
      [mention(owner, "just chatting", { mention: false }), "no-mention", "debug"],
    ];
    for (const [ev, reason, level] of cases) {
      const d = decide(fromWire(ev), ctx);
      assert.equal(d.action, "drop", reason);
      assert.ok(d.action === "drop");
      assert.equal(d.reason, reason);
      assert.equal(d.level, level);
    }
    assert.equal(verified.length, 0);
  });

  test("a `mention` tag counts as a mention like a p tag", () => {
    const ev = mention(owner, "hi", { mention: false, tags: [["mention", agent.pk]] });
    assert.equal(decide(fromWire(ev), context(config)).action, "accept");
  });

  test("require_mention: false accepts unmentioned messages", () => {
    const cfg = makeConfig({ defaults: { respond_to: "anyone", require_mention: false } });
    assert.equal(decide(fromWire(mention(stranger, "hi", { mention: false })), context(cfg)).action, "accept");
  });

  test("an edit or deletion of an already-handled event is an amendment; an edit of something new goes through the policy only where 40003 is listened to", () => {
    const cfg = makeConfig({ defaults: { respond_to: "anyone", kinds: [9, 40003] } });
    const handled = new Set(["a".repeat(64)]);
    const ctx = { ...context(cfg), handled: (id: string) => handled.has(id) };
    const edit = mention(owner, "fixed typo", { kind: 40003, tags: [["e", "a".repeat(64)]] });
    const d = decide(fromWire(edit), ctx);
    assert.ok(d.action === "amend" && d.amend === "edit" && d.targets[0] === "a".repeat(64));
    const del = mention(owner, "", {
      kind: 5,
      mention: false,
      tags: [
        ["e", "b".repeat(64)],
        ["e", "a".repeat(64)],
      ],
    });
    const dd = decide(fromWire(del), ctx);
    assert.ok(dd.action === "amend" && dd.amend === "delete" && dd.targets.length === 1, "only the handled target counts");
    const nip29 = decide(fromWire(mention(owner, "", { kind: 9005, mention: false, tags: [["e", "a".repeat(64)]] })), ctx);
    assert.ok(nip29.action === "amend" && nip29.amend === "delete", "a NIP-29 delete-event (9005) is a deletion too");
    const fresh = mention(owner, "edit of something new", { kind: 40003, tags: [["e", "b".repeat(64)]] });
    assert.equal(decide(fromWire(fresh), ctx).action, "accept");
    const elsewhere = decide(fromWire(fresh), { ...ctx, config: makeConfig({ defaults: { respond_to: "anyone" } }) });
    assert.ok(
      elsewhere.action === "drop" && elsewhere.reason === "amends-unknown" && elsewhere.level === "debug",
      "edits of other messages are not logged at info",
    );
  });

  test("a forged event (valid owner pubkey, bad signature) is denied with bad-signature", () => {
    const real = mention(owner, "do the thing");
    const forged = fromWire({ ...real, content: "do something else" });
    const d = decide(forged, context(config));
    assert.ok(d.action === "deny" && d.reason === "bad-signature");
  });

  test("with only '*', a channel the identity is not a member of is not configured", () => {
    const elsewhere = "6f1c2a4e-0000-4000-8000-00000000cafe";
    const d = decide(fromWire(mention(owner, "hi", { channel: elsewhere })), context(config));
    assert.ok(d.action === "drop" && d.reason === "not-configured");
  });
});

test("a '*' entry that sets respond_to does not open DMs (it is a default in effect)", () => {
  const config = makeConfig({ channels: [{ id: "*", respond_to: "anyone" }] });
  const d = decide(fromWire(mention(stranger, "hi", { channel: DM })), context(config));
  assert.ok(d.action === "deny" && d.reason === "dm-not-owner");
  assert.equal(decide(fromWire(mention(stranger, "hi", { channel: CHANNEL })), context(config)).action, "accept");
});

test("a channel the config does not name is not answered, even one the identity is a member of", () => {
  const config = makeConfig({ channels: [{ id: CHANNEL, respond_to: "anyone" }] });
  // The DM is in the directory (a member), but only CHANNEL is listed and there is no "*".
  const d = decide(fromWire(mention(owner, "hi", { channel: DM })), context(config));
  assert.ok(d.action === "drop" && d.reason === "not-configured", JSON.stringify(d));
  assert.equal(decide(fromWire(mention(stranger, "hi", { channel: CHANNEL })), context(config)).action, "accept");
});

describe("a verified sibling (another agent of the same owner)", () => {
  const ownerOnly = { respond_to: "owner-only" as const, allow: [], opensDm: false };
  test("passes like the owner, in a DM too; never where the channel answers no one", () => {
    assert.deepEqual(authorAllowed(ownerOnly, "stream", stranger.pk, owner.pk, true), { allowed: true, by: "sibling" });
    assert.deepEqual(authorAllowed(ownerOnly, "dm", stranger.pk, owner.pk, true), { allowed: true, by: "sibling" });
    assert.deepEqual(authorAllowed({ ...ownerOnly, respond_to: "nobody" }, "stream", stranger.pk, owner.pk, true), {
      allowed: false,
      reason: "nobody",
    });
  });
  test("without an owner configured there is no sibling: the author is judged as anyone else", () => {
    assert.deepEqual(authorAllowed(ownerOnly, "stream", stranger.pk, undefined, true), { allowed: false, reason: "not-owner" });
    assert.deepEqual(authorAllowed(ownerOnly, "dm", stranger.pk, undefined, true), { allowed: false, reason: "dm-not-owner" });
  });
  test("an author not said to be a sibling is not one", () => {
    assert.deepEqual(authorAllowed(ownerOnly, "stream", stranger.pk, owner.pk), { allowed: false, reason: "not-owner" });
    assert.deepEqual(authorAllowed(ownerOnly, "stream", owner.pk, owner.pk), { allowed: true });
  });
});
