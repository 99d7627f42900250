/**
 * No loops with other bots, in the gate: an agent's mentions are answered at most
 * `policy.bot_exchanges` times in one thread with no person's message between, then dropped
 * with one `gate.loop_guard` line; a person's message (addressed or not) starts the count
 * again; the count is per channel and thread, and a flat channel's top level is one thread.
 * Who is an agent: what the daemon knows at once (`agentNow`) or after a look-up (`isAgent`).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { verifyEvent, type Event } from "nostr-tools";
import type { GateContext } from "../../src/gate/decide.js";
import { Gate } from "../../src/gate/gate.js";
import { DeniedReporter } from "../../src/gate/denied.js";
import { LoopGuard } from "../../src/gate/loop-guard.js";
import { ActiveConversations, agentCheck } from "../../src/gate/participation.js";
import type { ChannelInfo } from "../../src/gate/policy.js";
import type { Config } from "../../src/config/schema.js";
import {
  agent,
  owner,
  teammate,
  person,
  CHANNEL,
  mention,
  fromWire,
  makeConfig,
  captureLogger,
  type Person,
} from "../../kit/queue-helpers.js";

const OTHER = "6f1c2a4e-0000-4000-8000-000000000002";
const DIRECTORY: Record<string, ChannelInfo> = {
  [CHANNEL]: { id: CHANNEL, name: "general", type: "stream" },
  [OTHER]: { id: OTHER, name: "other", type: "stream" },
};
const bot = person();

function setup(config: Config, o: { known?: boolean } = {}) {
  const { logger, lines } = captureLogger();
  const lookups: string[] = [];
  const isBot = (pk: string) => pk === bot.pk;
  // What a look-up found stays known, as the daemon's profile cache keeps it.
  const cached = new Map<string, boolean>();
  const ctx: GateContext = {
    self: agent.pk,
    owner: owner.pk,
    config,
    channel: (id) => DIRECTORY[id],
    handled: () => false,
    verify: verifyEvent,
    participation: {
      active: new ActiveConversations(),
      isAgent: async (pk) => (lookups.push(pk), cached.set(pk, isBot(pk)), isBot(pk)),
      // Known at once (a cached profile, a bot seat), or only after a first look-up.
      agentNow: (pk) => (o.known ? isBot(pk) : cached.get(pk)),
    },
    loop: new LoopGuard({ limit: () => config.policy.bot_exchanges, logger }),
  };
  const reporter = new DeniedReporter({ logger, publish: async () => undefined, verify: verifyEvent });
  const gate = new Gate({
    context: ctx,
    reporter,
    control: { execute: async () => undefined } as never,
    logger,
    claimControl: async () => true,
  });
  const handle = async (ev: Event) => {
    const first = gate.decide(ev);
    const d = (await gate.recheck(ev, first)) ?? first;
    await gate.act(ev, d);
    return d;
  };
  return { handle, lines, lookups, gate };
}

function inThread(who: Person, root: Event, text: string, o: { mention?: boolean; channel?: string } = {}): Event {
  return fromWire(mention(who, text, { mention: o.mention, channel: o.channel, tags: [["e", root.id, "", "reply"]] }));
}

describe("loop guard", () => {
  const config = makeConfig({ defaults: { respond_to: "anyone" } });

  for (const known of [true, false])
    test(`an agent is answered bot_exchanges times in a thread, then silence and one gate.loop_guard line (author ${known ? "known at once" : "looked up"})`, async () => {
      const s = setup(config, { known });
      const root = fromWire(mention(bot, "@agent ping"));
      const actions = [(await s.handle(root)).action];
      for (let i = 0; i < 4; i++) actions.push((await s.handle(inThread(bot, root, `@agent ping ${i}`))).action);
      assert.deepEqual(actions, ["accept", "accept", "accept", "drop", "drop"]);
      const guard = s.lines.filter((l) => l.evt === "gate.loop_guard");
      assert.equal(guard.length, 1, "one line for the streak");
      assert.equal(guard[0]!.limit, 3);
      assert.equal(guard[0]!.level, "info");
      const drops = s.lines.filter((l) => l.reason === "loop-guard");
      assert.equal(drops.length, 2, "each silenced message is logged with its reason");
      if (!known) assert.ok(s.lookups.includes(bot.pk));
    });

  test("an accepted mention from an author not yet known is decided in its tick (an edit right behind it finds it); the look-up runs beside", async () => {
    const s = setup(config);
    const ev = fromWire(mention(bot, "@agent ping"));
    const first = s.gate.decide(ev);
    assert.equal(first.action, "accept");
    assert.equal(s.gate.recheck(ev, first), undefined, "nothing to wait for");
    assert.deepEqual(s.lookups, [bot.pk]);
  });

  test("a person's message between, addressed to the agent or not, starts the count again", async () => {
    const s = setup(config, { known: true });
    const root = fromWire(mention(bot, "@agent ping"));
    await s.handle(root);
    for (let i = 0; i < 2; i++) await s.handle(inThread(bot, root, `@agent ping ${i}`));
    assert.equal((await s.handle(inThread(bot, root, "@agent one too many"))).action, "drop");
    // The owner's mention: a person, answered, and the streak is over.
    assert.equal((await s.handle(inThread(owner, root, "@agent what do you both think?"))).action, "accept");
    for (let i = 0; i < 3; i++) assert.equal((await s.handle(inThread(bot, root, `@agent again ${i}`))).action, "accept");
    assert.equal((await s.handle(inThread(bot, root, "@agent and again"))).action, "drop");
    // A person's message that is not addressed to the agent resets it too.
    await s.handle(inThread(teammate, root, "bots, please", { mention: false }));
    assert.equal((await s.handle(inThread(bot, root, "@agent after the person"))).action, "accept");
    assert.equal(s.lines.filter((l) => l.evt === "gate.loop_guard").length, 2, "one line per streak");
  });

  test("the count is per thread and per channel: a root id in another channel is another thread", async () => {
    const s = setup(makeConfig({ defaults: { respond_to: "anyone" }, policy: { bot_exchanges: 1 } }), { known: true });
    const root = fromWire(mention(bot, "@agent ping"));
    assert.equal((await s.handle(root)).action, "accept");
    assert.equal((await s.handle(inThread(bot, root, "@agent again"))).action, "drop");
    assert.equal((await s.handle(fromWire(mention(bot, "@agent a new thread")))).action, "accept");
    assert.equal((await s.handle(inThread(bot, root, "@agent same root, other channel", { channel: OTHER }))).action, "accept");
  });

  test("in a flat channel the top level is one thread", async () => {
    const cfg = makeConfig({ defaults: { respond_to: "anyone", reply_placement: "flat" }, policy: { bot_exchanges: 2 } });
    const s = setup(cfg, { known: true });
    const actions = [];
    for (let i = 0; i < 3; i++) actions.push((await s.handle(fromWire(mention(bot, `@agent top ${i}`)))).action);
    assert.deepEqual(actions, ["accept", "accept", "drop"]);
    assert.equal((await s.handle(fromWire(mention(teammate, "@agent hello")))).action, "accept");
    assert.equal((await s.handle(fromWire(mention(bot, "@agent after a person")))).action, "accept");
  });

  test("people are never counted: the owner and a person answered as often as they ask", async () => {
    const s = setup(makeConfig({ defaults: { respond_to: "anyone" }, policy: { bot_exchanges: 0 } }), { known: true });
    const root = fromWire(mention(teammate, "@agent one"));
    assert.equal((await s.handle(root)).action, "accept");
    for (let i = 0; i < 3; i++) assert.equal((await s.handle(inThread(owner, root, `@agent ${i}`))).action, "accept");
    assert.equal((await s.handle(inThread(bot, root, "@agent bot_exchanges 0: never"))).action, "drop");
  });
});

describe("who is an agent", () => {
  const lookup = (p: { authTag?: string[]; directoryEntry?: boolean } | undefined) => async () => p;
  test("a NIP-OA auth tag, a kind 10100 entry, or a seat the daemon knows (bot role, teammate); not a plain profile", async () => {
    assert.equal(await agentCheck(lookup({ authTag: ["auth", "x", "", "y"] }))(bot.pk), true);
    assert.equal(await agentCheck(lookup({ directoryEntry: true }))(bot.pk), true);
    assert.equal(await agentCheck(lookup({}))(bot.pk), false);
    assert.equal(await agentCheck(lookup({}), 2000, (pk) => pk === bot.pk)(bot.pk), true);
  });

  test("a profile the relay could not give is not known either way", async () => {
    assert.equal(await agentCheck(lookup(undefined))(bot.pk), undefined);
    assert.equal(await agentCheck(async () => Promise.reject(new Error("down")))(bot.pk), undefined);
  });
});
