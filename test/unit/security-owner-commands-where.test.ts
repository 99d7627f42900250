/**
 * The owner's `!cancel`/`!shutdown` arriving while a turn runs, wherever it can arrive
 * besides a reply to a question (security-owner-commands.test.ts): in a DM, as the new text
 * of an edit, and as a message that continues a conversation by participation. Each is the
 * command — the turn cancelled (or the daemon stopping) and one 40099 outcome — and never
 * text for the running turn. The real intake, gate decision and control executor, in process.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { finalizeEvent, verifyEvent, type Event, type EventTemplate } from "nostr-tools";
import { Intake } from "../../src/intake/intake.js";
import { decide, type GateContext } from "../../src/gate/decide.js";
import { ControlExecutor, type ControlTarget } from "../../src/gate/control.js";
import { KIND } from "../../src/nostr/kinds.js";
import { agent, CHANNEL, DM, captureLogger, fromWire, makeConfig, mention, owner } from "../../kit/queue-helpers.js";

function world(config: Record<string, unknown>, o: { channelActive?: boolean; threadActive?: string } = {}) {
  const { logger, lines } = captureLogger("debug");
  const published: EventTemplate[] = [];
  const publish = async (t: EventTemplate) => {
    published.push(t);
    return finalizeEvent({ ...t, created_at: t.created_at || Math.floor(Date.now() / 1000) }, agent.sk);
  };
  const cancelled: ControlTarget[] = [];
  let shutdowns = 0;
  const control = new ControlExecutor({
    self: agent.pk,
    actions: {
      cancel: async (target) => {
        cancelled.push(target);
        return 1;
      },
      rotate: async () => 0,
      status: async () => ({ inFlight: 1, queued: 0 }),
      shutdown: () => void shutdowns++,
    },
    publish,
    logger,
  });
  /** What reached the running turn or the queue as text: the failure these tests look for. */
  const reached: string[] = [];
  const handled = new Set<string>();
  const ctx: GateContext = {
    self: agent.pk,
    owner: owner.pk,
    config: makeConfig(config),
    channel: (id) => (id === CHANNEL ? { id, name: "general", type: "stream" } : id === DM ? { id, name: "dm", type: "dm" } : undefined),
    handled: (id) => handled.has(id),
    verify: (e) => verifyEvent(e),
    participation: {
      active: {
        isThreadActive: (r, ch) => ch === CHANNEL && r === o.threadActive,
        isChannelActive: (ch) => !!o.channelActive && ch === CHANNEL,
        rebuilding: undefined,
      },
      isAgent: async () => false,
    },
  };
  const intake = new Intake({
    gate: {
      decide: (e) => decide(e, ctx),
      // What Gate.decide does for a participation candidate: its author is a person.
      recheck: (e, d) =>
        d.action === "drop" && d.candidate
          ? Promise.resolve(decide(e, ctx, undefined, undefined, { via: d.candidate, author: "human" }))
          : undefined,
      act: async (e, d) => {
        if (d.action === "control") await control.execute(e, d.command, d.channel.id);
      },
    },
    scheduler: {
      accept: async (e) => {
        reached.push(`queued:${e.content}`);
        return true;
      },
      scopeOf: (_e, ch) => ({ key: ch, channel: ch }) as never,
      runningTurn: () => 1,
      joinRunning: (_t, _id, join) => void join(),
    },
    dispatcher: { canTake: () => true, take: (_t, e) => void reached.push(`steered:${e.content}`) },
    amendments: {
      edit: async (e: Event) => void reached.push(`edited:${e.content}`),
      delete: async () => undefined,
    } as never,
    active: { mark: () => undefined, isThreadActive: (r, ch) => ch === CHANNEL && r === o.threadActive },
    self: agent.pk,
    local: { noteSeen: () => undefined, markAccepted: (id: string) => void handled.add(id) },
    owner: () => owner.pk,
    stopping: () => false,
    logger,
  });
  const outcomes = () => published.filter((t) => t.kind === KIND.system).map((t) => JSON.parse(t.content));
  return { intake, cancelled, reached, outcomes, lines, handled, shutdowns: () => shutdowns };
}

function assertCancelled(w: ReturnType<typeof world>, channel: string, thread?: string) {
  assert.deepEqual(w.cancelled, [thread ? { channel, thread } : { channel }]);
  const outcomes = w.outcomes();
  assert.equal(outcomes.length, 1, JSON.stringify(outcomes));
  assert.equal(outcomes[0].type, "control.cancel");
  assert.equal(outcomes[0].actor, owner.pk);
  assert.deepEqual(w.reached, [], "the command reached the turn as text");
}

describe("the owner's command while a turn runs, wherever it arrives", () => {
  test("a DM tagging the agent, as Buzz clients do: !cancel cancels the DM's turn with its 40099", async () => {
    const w = world({});
    await w.intake.handle(fromWire(mention(owner, "!cancel", { channel: DM })));
    assertCancelled(w, DM);
  });

  test("a DM tagging the agent: !shutdown stops the daemon with its 40099", async () => {
    const w = world({});
    await w.intake.handle(fromWire(mention(owner, "!shutdown", { channel: DM })));
    assert.equal(w.shutdowns(), 1);
    assert.deepEqual(
      w.outcomes().map((o) => o.type),
      ["control.shutdown"],
    );
    assert.deepEqual(w.reached, []);
  });

  test("a DM tagging no one, with require_mention: false for it: still !cancel, not text for the turn", async () => {
    const w = world({ channels: [{ id: CHANNEL }, { id: DM, require_mention: false }] });
    await w.intake.handle(fromWire(mention(owner, "!cancel", { channel: DM, mention: false })));
    assertCancelled(w, DM);
  });

  test("an edit of the owner's message in the running turn whose new text is !cancel: cancelled, the edit not applied", async () => {
    const w = world({});
    const asked = fromWire(mention(owner, "@agent deploy it", { channel: DM }));
    await w.intake.handle(asked);
    assert.deepEqual(w.reached, ["queued:@agent deploy it", "steered:@agent deploy it"]);
    w.reached.length = 0;
    const edit = fromWire(mention(owner, "!cancel", { channel: DM, kind: KIND.edit, mention: false, tags: [["e", asked.id]] }));
    await w.intake.handle(edit);
    assertCancelled(w, DM);
  });

  test("a message continuing the channel the agent is active in (participation: channel), tagging no one: !cancel", async () => {
    const w = world({ defaults: { respond_to: "owner-only", participation: "channel" } }, { channelActive: true });
    await w.intake.handle(fromWire(mention(owner, "!cancel", { mention: false })));
    assertCancelled(w, CHANNEL);
  });

  test("a reply tagging no one in the thread the agent is in (participation: thread): !cancel cancels that thread", async () => {
    const root = fromWire(mention(owner, "@agent deploy it"));
    const w = world({ defaults: { respond_to: "owner-only", participation: "thread" } }, { threadActive: root.id });
    await w.intake.handle(fromWire(mention(owner, "!cancel", { mention: false, tags: [["e", root.id, "", "root"]] })));
    assertCancelled(w, CHANNEL, root.id);
  });

  test("an edit whose new text is not exactly a command is an ordinary edit", async () => {
    const w = world({});
    const asked = fromWire(mention(owner, "@agent deploy it", { channel: DM }));
    await w.intake.handle(asked);
    w.reached.length = 0;
    const edit = fromWire(mention(owner, "!status please", { channel: DM, kind: KIND.edit, mention: false, tags: [["e", asked.id]] }));
    await w.intake.handle(edit);
    assert.deepEqual(w.cancelled, []);
    assert.deepEqual(w.reached, ["edited:!status please"]);
  });
});
