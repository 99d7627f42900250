/**
 * Thread participation in the gate: which messages that do not mention the agent continue a
 * conversation it is in, which do not, and what is verified and logged. The active set's
 * expiry and bound on a clock the test moves.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { verifyEvent, type Event } from "nostr-tools";
import { decide, type GateContext } from "../../src/gate/decide.js";
import { Gate } from "../../src/gate/gate.js";
import { DeniedReporter } from "../../src/gate/denied.js";
import { ActiveConversations, ACTIVE_TTL_MS, MAX_ACTIVE } from "../../src/gate/participation.js";
import type { ChannelInfo } from "../../src/gate/policy.js";
import type { Config } from "../../src/config/schema.js";
import {
  agent,
  owner,
  teammate,
  stranger,
  CHANNEL,
  mention,
  fromWire,
  makeConfig,
  captureLogger,
  type Person,
} from "../../kit/queue-helpers.js";

/** A second channel of the agent's, where a reply may name a thread root of the first. */
const OTHER = "6f1c2a4e-0000-4000-8000-0000000000b2";
const DIRECTORY: Record<string, ChannelInfo> = {
  [CHANNEL]: { id: CHANNEL, name: "general", type: "stream" },
  [OTHER]: { id: OTHER, name: "other", type: "stream" },
};

function setup(config: Config, o: { agents?: readonly Person[]; lookupFails?: boolean } = {}) {
  let now = 1_700_000_000_000;
  const active = new ActiveConversations({ now: () => now });
  const verified: Event[] = [];
  const ctx: GateContext = {
    self: agent.pk,
    owner: owner.pk,
    config,
    channel: (id) => DIRECTORY[id],
    handled: () => false,
    verify: (ev) => (verified.push(ev), verifyEvent(ev)),
    participation: {
      active,
      isAgent: async (pk) => (o.lookupFails ? undefined : (o.agents ?? []).some((a) => a.pk === pk)),
    },
  };
  const { logger, lines } = captureLogger();
  const published: unknown[] = [];
  const reporter = new DeniedReporter({ logger, publish: async (t) => published.push(t), verify: verifyEvent });
  const gate = new Gate({
    context: ctx,
    reporter,
    control: { execute: async () => undefined } as never,
    logger,
    claimControl: async () => true,
  });
  // The decision as the daemon's intake reaches it: decided at once, then after any look-up.
  const decideFully = async (ev: Event) => {
    const first = gate.decide(ev);
    return (await gate.recheck(ev, first)) ?? first;
  };
  return { active, ctx, gate, decideFully, verified, lines, published, advance: (ms: number) => (now += ms) };
}

/** A reply in `root`'s thread (NIP-10 reply marker), mentioning `to` (none: nobody). */
function reply(who: Person, root: Event, text: string, to: Person[] = []): Event {
  return fromWire(mention(who, text, { mention: false, tags: [["e", root.id, "", "reply"], ...to.map((p) => ["p", p.pk])] }));
}

describe("thread participation", () => {
  const config = makeConfig({ defaults: { respond_to: "allowlist", allow: [teammate.npub] } });
  const root = fromWire(mention(owner, "@agent start"));

  test("a person's bare reply in an active thread continues it; signatures are checked only for it", async () => {
    const s = setup(config);
    s.active.mark(root.id, CHANNEL);
    const d = await s.decideFully(reply(teammate, root, "and also this"));
    assert.equal(d.action, "accept");
    assert.ok(d.action === "accept" && d.continued === "thread");
    assert.equal(s.verified.length, 1);
  });

  test("not continued: a thread the agent is not in, a reply to someone else only, an agent's reply, an author not found", async () => {
    const other = fromWire(mention(owner, "unrelated", { mention: false }));
    const bot = teammate;
    // Chatter elsewhere is logged at debug; what the agent passes over in its own thread at info.
    for (const [name, ev, o, reason, level] of [
      ["inactive thread", reply(owner, other, "hi"), {}, "no-mention", "debug"],
      ["handed on", reply(owner, root, "over to you", [teammate]), {}, "no-mention", "info"],
      ["an agent", reply(bot, root, "I can do that"), { agents: [bot] }, "participation-agent", "info"],
      ["lookup failed", reply(owner, root, "ok"), { lookupFails: true }, "participation-unknown-author", "info"],
    ] as const) {
      const s = setup(config, o);
      s.active.mark(root.id, CHANNEL);
      const d = await s.decideFully(ev);
      assert.equal(d.action, "drop", name);
      assert.ok(d.action === "drop" && d.reason === reason, `${name}: ${JSON.stringify(d.action === "drop" && d.reason)}`);
      assert.equal(d.action === "drop" && d.level, level, `${name}: log level`);
      assert.equal(s.verified.length, 0, `${name}: nothing verified`);
    }
  });

  test("a reply that mentions the agent among others is a mention as always", async () => {
    const s = setup(config);
    const d = await s.decideFully(reply(owner, root, "both of you", [teammate, agent]));
    assert.ok(d.action === "accept" && d.continued === undefined);
  });

  test("a continuation the respond-to policy refuses is logged with a participation reason, never answered", async () => {
    const s = setup(makeConfig({ defaults: { respond_to: "owner-only", on_denied: "reply" } }));
    s.active.mark(root.id, CHANNEL);
    const ev = reply(stranger, root, "me too");
    const d = await s.gate.handle(ev);
    assert.ok(d.action === "drop" && d.reason === "participation-not-owner");
    const line = s.lines.find((l) => l.evt === "gate.denied" && l.event === ev.id);
    assert.equal(line?.reason, "participation-not-owner");
    assert.equal(line?.level, "info");
    assert.deepEqual(s.published, [], "no 🔒 and no reply");
  });

  test("participation: channel continues bare top-level messages where the agent is active; thread mode does not", async () => {
    for (const [mode, want] of [
      ["channel", "accept"],
      ["thread", "drop"],
      ["off", "drop"],
    ] as const) {
      const s = setup(makeConfig({ defaults: { respond_to: "anyone", participation: mode } }));
      s.active.mark(root.id, CHANNEL);
      const d = await s.decideFully(fromWire(mention(teammate, "anyone around?", { mention: false })));
      assert.equal(d.action, want, mode);
      if (d.action === "accept") assert.equal(d.continued, "channel");
    }
  });

  test("a bare reply in another channel naming an active thread's root is no continuation there", async () => {
    const s = setup(makeConfig({ defaults: { respond_to: "anyone" } }));
    s.active.mark(root.id, CHANNEL);
    const elsewhere = fromWire(
      mention(teammate, "continue, please", { channel: OTHER, mention: false, tags: [["e", root.id, "", "root"]] }),
    );
    const d = await s.decideFully(elsewhere);
    assert.ok(d.action === "drop" && d.reason === "no-mention", JSON.stringify(d.action === "drop" ? d.reason : d.action));
    const same = await s.decideFully(reply(teammate, root, "continue, please"));
    assert.ok(same.action === "accept" && same.continued === "thread", "the same reply in the thread's own channel continues it");
  });

  test("participation: off never continues a thread", async () => {
    const s = setup(makeConfig({ defaults: { respond_to: "anyone", participation: "off" } }));
    s.active.mark(root.id, CHANNEL);
    const d = decide(reply(owner, root, "bare"), s.ctx);
    assert.ok(d.action === "drop" && d.reason === "no-mention" && d.level === "info");
  });
});

describe("the active set", () => {
  test("a thread expires 24 h after its last activity; activity renews it", () => {
    let now = 0;
    const a = new ActiveConversations({ now: () => now });
    a.mark("r1", CHANNEL);
    now += ACTIVE_TTL_MS - 1;
    assert.ok(a.isThreadActive("r1", CHANNEL));
    a.mark("r1", CHANNEL);
    now += ACTIVE_TTL_MS - 1;
    assert.ok(a.isThreadActive("r1", CHANNEL), "renewed by the second activity");
    now += 2;
    assert.ok(!a.isThreadActive("r1", CHANNEL), "expired");
    assert.ok(!a.isChannelActive(CHANNEL));
  });

  test(`at most ${MAX_ACTIVE} threads: the least recently active is forgotten`, () => {
    let now = 1;
    const a = new ActiveConversations({ now: () => now });
    for (let i = 0; i <= MAX_ACTIVE; i++) a.mark(`r${i}`, CHANNEL, now++);
    assert.ok(!a.isThreadActive("r0", CHANNEL));
    assert.ok(a.isThreadActive("r1", CHANNEL) && a.isThreadActive(`r${MAX_ACTIVE}`, CHANNEL));
  });

  test("rebuilt from the store and from the relay's mentions of and replies by the agent", async () => {
    const now = 1_700_000_000_000;
    const saved: [string, number][] = [];
    const a = new ActiveConversations({
      now: () => now,
      store: {
        activeSince: async () => [
          { key: `thread:${CHANNEL}/stored`, at: now - 1000 },
          { key: "thread:bare-root", at: now - 1000 },
        ],
        markActive: async (k, at) => void saved.push([k, at]),
      },
    });
    const asked = fromWire(mention(owner, "@agent hi", { created_at: now / 1000 - 60 }));
    const answered = fromWire(
      mention(agent, "an answer", { mention: false, created_at: now / 1000 - 30, tags: [["e", "f".repeat(64), "", "reply"]] }),
    );
    const chatter = fromWire(mention(teammate, "not about the agent", { mention: false, created_at: now / 1000 - 10 }));
    await a.rebuild(agent.pk, async () => [asked, answered, chatter]);
    assert.ok(a.isThreadActive("stored", CHANNEL));
    assert.ok(!a.isThreadActive("bare-root", CHANNEL), "a stored root without its channel is not taken");
    assert.ok(a.isThreadActive(asked.id, CHANNEL), "a mention's thread");
    assert.ok(a.isThreadActive("f".repeat(64), CHANNEL), "a thread the agent replied in");
    assert.ok(!a.isThreadActive(chatter.id, CHANNEL));
    assert.ok(
      saved.some(([k]) => k === `thread:${CHANNEL}/${asked.id}`),
      "what the relay showed is stored",
    );
  });
});
