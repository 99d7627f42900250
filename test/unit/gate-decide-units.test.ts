/**
 * The gate's decision function one branch at a time (src/gate/decide.ts), for the paths the
 * respond-to matrix and the gate tests leave open: which refusals a sibling look-up may
 * change, which events are workflow wakes, control-command shape, edit and deletion targets,
 * thread participation (candidate, a person's / an agent's continuation, the level a passed-over
 * reply is logged at) and what an accepted or refused decision carries for the daemon
 * (the sibling verdict, the continuation, the workflow's owner, the channel whose cursor moves).
 */
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { verifyEvent, type Event } from "nostr-tools";
import { decide, isWakeCandidate, siblingMayChange, type Decision, type GateContext } from "../../src/gate/decide.js";
import type { ChannelInfo } from "../../src/gate/policy.js";
import { WORKFLOW_TAG } from "../../src/nostr/workflow.js";
import type { Config } from "../../src/config/schema.js";
import { agent, owner, teammate, stranger, CHANNEL, DM, mention, fromWire, makeConfig } from "../../kit/queue-helpers.js";

const DIRECTORY: Record<string, ChannelInfo> = {
  [CHANNEL]: { id: CHANNEL, name: "general", type: "stream" },
  [DM]: { id: DM, name: "dm", type: "dm" },
};

function context(config: Config, extra: Partial<GateContext> = {}): GateContext {
  return {
    self: agent.pk,
    owner: owner.pk,
    config,
    channel: (id) => DIRECTORY[id],
    handled: () => false,
    verify: (ev) => verifyEvent(ev),
    ...extra,
  };
}

/** Participation with a fixed set of active thread roots (no channel is active). */
function participation(activeRoots: string[]): NonNullable<GateContext["participation"]> {
  const roots = new Set(activeRoots);
  return {
    active: {
      isThreadActive: (root, channel) => channel === CHANNEL && roots.has(root),
      isChannelActive: () => false,
      rebuilding: undefined,
    },
    isAgent: async () => false,
  };
}

const ROOT = "c".repeat(64);
/** A reply in ROOT's thread (NIP-10 root marker), not mentioning the agent unless told. */
function reply(who: typeof owner, content: string, tags: string[][] = []): Event {
  return fromWire(mention(who, content, { mention: false, tags: [["e", ROOT, "", "root"], ...tags] }));
}

const ownerOnly = makeConfig({ defaults: { respond_to: "owner-only" } });
const anyone = makeConfig({ defaults: { respond_to: "anyone" } });

function refusal(d: Decision): { action: string; reason: string; level: string } {
  assert.ok(d.action === "drop" || d.action === "deny", JSON.stringify(d));
  return { action: d.action, reason: d.reason, level: d.level };
}

describe("which refusals a sibling look-up may change", () => {
  const sibling = async () => "verified" as const;
  /** The denial `decide` gives a stranger for each refusal reason. */
  function denial(reason: string): Decision {
    const cases: Record<string, () => Decision> = {
      "not-owner": () => decide(fromWire(mention(stranger, "hi")), context(ownerOnly)),
      "not-allowlisted": () => decide(fromWire(mention(stranger, "hi")), context(makeConfig({ defaults: { respond_to: "allowlist" } }))),
      "dm-not-owner": () => decide(fromWire(mention(stranger, "hi", { channel: DM })), context(anyone)),
      nobody: () => decide(fromWire(mention(stranger, "hi")), context(makeConfig({ defaults: { respond_to: "nobody" } }))),
    };
    const d = cases[reason]!();
    assert.equal(d.action === "deny" && d.reason, reason);
    return d;
  }

  test("owner-only, allowlist and DM refusals are worth a sibling look-up when an owner is configured", () => {
    for (const reason of ["not-owner", "not-allowlisted", "dm-not-owner"])
      assert.equal(siblingMayChange(denial(reason), { owner: owner.pk, sibling }), true, reason);
  });

  test("a channel that answers nobody is not worth a look-up: a sibling would be refused too", () => {
    assert.equal(siblingMayChange(denial("nobody"), { owner: owner.pk, sibling }), false);
  });

  test("without a configured owner, or without a way to look siblings up, no look-up is made", () => {
    assert.equal(siblingMayChange(denial("not-owner"), { owner: undefined, sibling }), false);
    assert.equal(siblingMayChange(denial("not-owner"), { owner: owner.pk, sibling: undefined }), false);
  });

  test("drops and accepts are never looked up again", () => {
    const dropped = decide(fromWire(mention(stranger, "a reaction", { kind: 7 })), context(ownerOnly));
    assert.equal(dropped.action, "drop");
    assert.equal(siblingMayChange(dropped, { owner: owner.pk, sibling }), false);
    const accepted = decide(fromWire(mention(owner, "hi")), context(ownerOnly));
    assert.equal(accepted.action, "accept");
    assert.equal(siblingMayChange(accepted, { owner: owner.pk, sibling }), false);
  });
});

describe("a verified sibling", () => {
  test("is accepted where the owner would be, and the acceptance says it was as a sibling", () => {
    const d = decide(fromWire(mention(stranger, "hi")), context(ownerOnly), "verified");
    assert.equal(d.action, "accept");
    assert.ok(d.action === "accept");
    assert.equal(d.sibling, "verified");
  });

  test("an author that is not a sibling is denied, and the denial carries why it is not one", () => {
    const d = decide(fromWire(mention(stranger, "hi")), context(ownerOnly), "no-tag");
    assert.ok(d.action === "deny", JSON.stringify(d));
    assert.equal(d.reason, "not-owner");
    assert.equal(d.sibling, "no-tag");
  });

  test("a message the policy lets in on its own is not counted as a sibling's", () => {
    const d = decide(fromWire(mention(owner, "hi")), context(ownerOnly), "verified");
    assert.ok(d.action === "accept");
    assert.equal(d.sibling, undefined);
  });
});

describe("workflow wake candidates", () => {
  const wakeOn = makeConfig({ workflows: { wake: true } });
  const lookup = async () => ({ ok: true as const, owner: owner.pk });
  const workflow = fromWire(mention(stranger, "run", { tags: [[WORKFLOW_TAG, "true"]] }));

  test("a workflow message is checked against the relay's key when wakes are on and a checker is wired", () => {
    assert.equal(isWakeCandidate(workflow, { config: wakeOn, workflowWake: lookup }), true);
  });

  test("nothing is a candidate with wakes off, without a checker, or without the workflow marker", () => {
    assert.equal(isWakeCandidate(workflow, { config: ownerOnly, workflowWake: lookup }), false);
    assert.equal(isWakeCandidate(workflow, { config: wakeOn, workflowWake: undefined }), false);
    assert.equal(isWakeCandidate(fromWire(mention(stranger, "run")), { config: wakeOn, workflowWake: lookup }), false);
  });
});

describe("a workflow wake's verdict", () => {
  const ev = fromWire(mention(stranger, "run", { tags: [[WORKFLOW_TAG, "true"]] }));

  test("a verified wake is accepted for the owner it speaks for, though the relay's key signed it", () => {
    const d = decide(ev, context(ownerOnly), undefined, { ok: true, owner: owner.pk });
    assert.ok(d.action === "accept", JSON.stringify(d));
    assert.equal(d.workflowOwner, owner.pk);
  });

  test("a refused wake is denied with the refusal's reason", () => {
    const d = decide(ev, context(ownerOnly), undefined, { ok: false, reason: "workflow-forged" });
    assert.deepEqual(refusal(d), { action: "deny", reason: "workflow-forged", level: "info" });
  });

  test("a wake in a channel that answers nobody is denied like the owner would be", () => {
    const d = decide(ev, context(makeConfig({ defaults: { respond_to: "nobody" } })), undefined, { ok: true, owner: owner.pk });
    assert.deepEqual(refusal(d), { action: "deny", reason: "nobody", level: "info" });
  });
});

describe("control commands", () => {
  test("a control word in another kind than a chat message is not a command", () => {
    const d = decide(fromWire(mention(owner, "!cancel", { kind: 7 })), context(ownerOnly));
    assert.deepEqual(refusal(d), { action: "drop", reason: "kind-not-subscribed", level: "info" });
  });

  test("a control word that names the agent with a `mention` tag but no `p` tag is ordinary chat", () => {
    const ev = fromWire(mention(owner, "!status", { mention: false, tags: [["mention", agent.pk]] }));
    assert.equal(decide(ev, context(ownerOnly)).action, "accept");
  });

  test("a control word the owner addresses to someone else is not a command for this agent", () => {
    const ev = fromWire(mention(owner, "!cancel", { mention: false, tags: [["p", teammate.pk]] }));
    assert.deepEqual(refusal(decide(ev, context(ownerOnly))), { action: "drop", reason: "no-mention", level: "debug" });
  });
});

describe("edits and deletions", () => {
  const handledId = "a".repeat(64);
  const ctx = context(anyone, { handled: (id) => id === handledId });

  test("an edit replaces only the message its first `e` tag names", () => {
    const ev = fromWire(
      mention(owner, "fixed", {
        kind: 40003,
        mention: false,
        tags: [
          ["e", "b".repeat(64)],
          ["e", handledId],
        ],
      }),
    );
    assert.deepEqual(refusal(decide(ev, ctx)), { action: "drop", reason: "amends-unknown", level: "debug" });
  });

  test("a deletion looks at its first fifty targets only", () => {
    const tags = Array.from({ length: 50 }, (_, i) => ["e", i.toString(16).padStart(64, "0")]);
    const ev = fromWire(mention(owner, "", { kind: 5, mention: false, tags: [...tags, ["e", handledId]] }));
    assert.deepEqual(refusal(decide(ev, ctx)), { action: "drop", reason: "amends-unknown", level: "debug" });
    const within = fromWire(mention(owner, "", { kind: 5, mention: false, tags: [...tags.slice(1), ["e", handledId]] }));
    const d = decide(within, ctx);
    assert.ok(d.action === "amend", JSON.stringify(d));
    assert.deepEqual(d.targets, [handledId]);
  });
});

describe("drops before the policy", () => {
  test("an event outside any channel is dropped at debug", () => {
    const ev = mention(owner, "no h tag");
    const d = decide(fromWire({ ...ev, tags: ev.tags.filter((t) => t[0] !== "h") }), context(anyone));
    assert.deepEqual(refusal(d), { action: "drop", reason: "no-channel", level: "debug" });
  });

  test("a kind the channel does not listen to still names the channel, so its cursor moves", () => {
    const d = decide(fromWire(mention(owner, "👍", { kind: 7 })), context(anyone));
    assert.ok(d.action === "drop");
    assert.equal(d.channel?.id, CHANNEL);
    assert.ok(d.policy, "a drop in a configured channel carries its policy");
  });
});

describe("thread participation", () => {
  test("with participation off, an unmentioned message is dropped at info", () => {
    const config = makeConfig({ defaults: { respond_to: "anyone", participation: "off" } });
    const d = decide(fromWire(mention(owner, "chatting", { mention: false })), context(config));
    assert.deepEqual(refusal(d), { action: "drop", reason: "no-mention", level: "info" });
  });

  test("a reply in a thread the agent is in is a candidate: held until its author is known", () => {
    const d = decide(reply(owner, "and also"), context(anyone, { participation: participation([ROOT]) }));
    assert.ok(d.action === "drop", JSON.stringify(d));
    assert.equal(d.reason, "no-mention");
    assert.equal(d.candidate, "thread");
  });

  test("a reply in the agent's thread handed on to someone else is dropped at info", () => {
    const d = decide(reply(owner, "over to you", [["p", teammate.pk]]), context(anyone, { participation: participation([ROOT]) }));
    assert.deepEqual(refusal(d), { action: "drop", reason: "no-mention", level: "info" });
    assert.equal(d.action === "drop" && d.candidate, undefined);
  });

  test("a reply in a thread the agent is not in is channel chatter, dropped at debug", () => {
    const d = decide(reply(owner, "unrelated"), context(anyone, { participation: participation([]) }));
    assert.deepEqual(refusal(d), { action: "drop", reason: "no-mention", level: "debug" });
  });

  test("a person's reply continues the conversation: accepted, marked as continued", () => {
    const d = decide(reply(owner, "and also"), context(anyone, { participation: participation([ROOT]) }), undefined, undefined, {
      via: "thread",
      author: "human",
    });
    assert.ok(d.action === "accept", JSON.stringify(d));
    assert.equal(d.continued, "thread");
  });

  test("the continuation found in the first decision stands in the second, without asking the active set again", () => {
    const d = decide(reply(owner, "and also"), context(anyone, { participation: participation([]) }), undefined, undefined, {
      via: "thread",
      author: "human",
    });
    assert.ok(d.action === "accept", JSON.stringify(d));
    assert.equal(d.continued, "thread");
  });

  test("an agent's reply, or one whose author could not be looked up, does not continue it", () => {
    const ctx = context(anyone, { participation: participation([ROOT]) });
    for (const [author, reason] of [
      ["agent", "participation-agent"],
      ["unknown", "participation-unknown-author"],
    ] as const) {
      const d = decide(reply(stranger, "and also"), ctx, undefined, undefined, { via: "thread", author });
      assert.deepEqual(refusal(d), { action: "drop", reason, level: "info" });
      assert.equal(d.action === "drop" && d.channel?.id, CHANNEL, "the channel's cursor moves past it");
      assert.ok(d.action === "drop" && d.policy);
    }
  });

  test("a continuation by an author the policy refuses is dropped, not denied: it was not addressed to the agent", () => {
    const ctx = context(ownerOnly, { participation: participation([ROOT]) });
    const d = decide(reply(stranger, "and also"), ctx, undefined, undefined, { via: "thread", author: "human" });
    assert.deepEqual(refusal(d), { action: "drop", reason: "participation-not-owner", level: "info" });
    assert.equal(d.action === "drop" && d.channel?.id, CHANNEL, "the channel's cursor moves past it");
    assert.ok(d.action === "drop" && d.policy);
  });
});
