/**
 * Owner control commands: recognised only from the owner with a valid signature, executed
 * once (a replay after restart is ignored), outcome published as 40099 in the thread.
 */
import { test, describe, after } from "node:test";
import assert from "node:assert/strict";
import { verifyEvent, type EventTemplate, type Event } from "nostr-tools";
import { Gate } from "../../src/gate/gate.js";
import { DeniedReporter } from "../../src/gate/denied.js";
import { ControlExecutor, type ControlTarget } from "../../src/gate/control.js";
import type { ChannelInfo } from "../../src/gate/policy.js";
import { SqliteStore } from "../../src/queue/sqlite-store.js";
import { KIND } from "../../src/nostr/kinds.js";
import {
  agent,
  owner,
  stranger,
  teammate,
  CHANNEL,
  mention,
  fromWire,
  makeConfig,
  captureLogger,
  tempDir,
} from "../../kit/queue-helpers.js";

const tmp = tempDir("bb-gate-control-");
after(() => tmp.cleanup());

function setup(respondTo = "owner-only", counts = { cancel: 0, rotate: 0 }) {
  const store = SqliteStore.open(`${tmp.dir}/${Math.random().toString(36).slice(2)}`);
  const { logger, lines } = captureLogger();
  const published: EventTemplate[] = [];
  const publish = async (t: EventTemplate) => void published.push(t);
  const calls: string[] = [];
  const targets: ControlTarget[] = [];
  const verified: Event[] = [];
  const gate = new Gate({
    logger,
    context: {
      self: agent.pk,
      owner: owner.pk,
      config: makeConfig({ defaults: { respond_to: respondTo } }),
      channel: (id): ChannelInfo | undefined => (id === CHANNEL ? { id, name: "general", type: "stream" } : undefined),
      handled: (id) => store.isAccepted(id),
      verify: (ev) => (verified.push(ev), verifyEvent(ev)),
    },
    reporter: new DeniedReporter({ logger, publish, verify: verifyEvent }),
    control: new ControlExecutor({
      self: agent.pk,
      logger,
      publish,
      actions: {
        cancel: async (t) => (calls.push("cancel"), targets.push(t), counts.cancel),
        rotate: async (t) => (calls.push("rotate"), targets.push(t), counts.rotate),
        status: async () => (calls.push("status"), { inFlight: 2, queued: 7 }),
        shutdown: () => void calls.push(`shutdown after ${published.length} publish`),
      },
    }),
    claimControl: (id, at) => store.claimControl(id, at),
    noteSeen: (ch, at) => store.noteSeen(ch, at),
  });
  after(() => store.close());
  return { gate, published, calls, targets, lines, verified, store };
}

const payload = (t: EventTemplate) => JSON.parse(t.content) as Record<string, unknown>;

describe("owner control commands", () => {
  test("!cancel from the owner: executed, 40099 {type, actor, target} in the same thread", async () => {
    const { gate, published, calls, targets, verified } = setup("owner-only", { cancel: 3, rotate: 0 });
    const root = "d".repeat(64);
    const ev = fromWire(mention(owner, "  !cancel \n", { tags: [["e", root, "", "reply"]] }));
    const d = await gate.handle(ev);
    assert.ok(d.action === "control" && d.command === "!cancel");
    assert.deepEqual(calls, ["cancel"]);
    assert.deepEqual(targets, [{ channel: CHANNEL, thread: root }]);
    assert.equal(verified.length, 1, "the command's signature was verified");
    assert.equal(published.length, 1);
    assert.equal(published[0]!.kind, KIND.system);
    assert.deepEqual(payload(published[0]!), { type: "control.cancel", outcome: "cancelled", count: 3, actor: owner.pk, target: agent.pk });
    assert.deepEqual(published[0]!.tags, [
      ["h", CHANNEL],
      ["e", root, "", "root"],
      ["e", ev.id, "", "reply"],
    ]);
  });

  test("no-op outcomes are published too; a top-level command targets the whole channel", async () => {
    const { gate, published, targets } = setup();
    await gate.handle(fromWire(mention(owner, "!cancel")));
    await gate.handle(fromWire(mention(owner, "!rotate")));
    assert.deepEqual(targets, [{ channel: CHANNEL }, { channel: CHANNEL }]);
    assert.deepEqual(
      published.map((p) => [payload(p).type, payload(p).outcome]),
      [
        ["control.cancel", "nothing-to-cancel"],
        ["control.rotate", "nothing-to-rotate"],
      ],
    );
  });

  test("!status reports turns in flight and queue depth", async () => {
    const { gate, published } = setup();
    await gate.handle(fromWire(mention(owner, "!status")));
    const p = payload(published[0]!);
    assert.equal(p.type, "control.status");
    assert.equal(p.in_flight, 2);
    assert.equal(p.queued, 7);
    assert.match(String(p.text), /2 turns in flight, 7 events queued/);
  });

  test("!shutdown publishes its outcome before shutting down", async () => {
    const { gate, calls, published } = setup();
    await gate.handle(fromWire(mention(owner, "!shutdown")));
    assert.deepEqual(calls, ["shutdown after 1 publish"]);
    assert.equal(payload(published[0]!).outcome, "shutting-down");
  });

  test("a command replayed after a restart (same event id) is not executed again, and that is said at info", async () => {
    const { gate, calls, published, lines } = setup();
    const ev = fromWire(mention(owner, "!shutdown"));
    await gate.handle(ev);
    await gate.handle(fromWire(ev));
    assert.equal(calls.length, 1);
    assert.equal(published.length, 1);
    // A dropped event is logged at info: at the default level a fleet's other daemons say they stood aside.
    assert.deepEqual(
      lines.filter((l) => l.evt === "gate.control_replayed").map((l) => [l.level, l.event, l.command]),
      [["info", ev.id, "!shutdown"]],
    );
  });

  test("from a non-owner the text is ordinary chat: denied under owner-only, a normal mention under anyone", async () => {
    const a = setup("owner-only");
    const d = await a.gate.handle(fromWire(mention(stranger, "!shutdown")));
    assert.ok(d.action === "deny" && d.reason === "not-owner");
    assert.deepEqual(a.calls, []);
    const b = setup("anyone");
    const d2 = await b.gate.handle(fromWire(mention(teammate, "!cancel")));
    assert.equal(d2.action, "accept");
    assert.deepEqual(b.calls, []);
  });

  test("forged: the owner's pubkey with a bad signature is denied, nothing executed", async () => {
    const { gate, calls, published, lines } = setup();
    const real = mention(owner, "!status");
    const forged = fromWire({ ...real, content: "!shutdown" });
    const d = await gate.handle(forged);
    assert.ok(d.action === "deny" && d.reason === "bad-signature");
    assert.deepEqual(calls, []);
    assert.equal(published.length, 0);
    assert.equal(lines.filter((l) => l.evt === "gate.denied" && l.reason === "bad-signature").length, 1);
  });

  test("a command that does not p-tag the agent, or is not exact, is not a command", async () => {
    const { gate, calls } = setup("anyone");
    await gate.handle(fromWire(mention(owner, "!shutdown", { mention: false, tags: [["mention", agent.pk]] })));
    await gate.handle(fromWire(mention(owner, "!shutdown now")));
    await gate.handle(fromWire(mention(owner, "!SHUTDOWN")));
    assert.deepEqual(calls, []);
  });

  test("decided events move the channel cursor; forged ones and accepted ones (the queue does that) do not", async () => {
    const { gate, store } = setup();
    const forgedReal = mention(owner, "!status", { created_at: 5_000 });
    await gate.handle(fromWire({ ...forgedReal, content: "!shutdown" }));
    assert.equal(store.cursor(CHANNEL), undefined);
    await gate.handle(fromWire(mention(owner, "please deploy", { created_at: 4_000 })));
    assert.equal(store.cursor(CHANNEL), undefined, "accepted: the queue's accept moves the cursor");
    await gate.handle(fromWire(mention(stranger, "hi", { created_at: 4_100 })));
    assert.equal(store.cursor(CHANNEL), 4_100);
    await gate.handle(fromWire(mention(owner, "!status", { created_at: 4_200 })));
    assert.equal(store.cursor(CHANNEL), 4_200);
  });
});
