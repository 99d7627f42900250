/**
 * on_denied: a 🔒 reaction, a one-line reply in the thread, or silence; always one log
 * line; at most one reaction/reply per (author, channel) per hour; never in DMs.
 */
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { verifyEvent, type EventTemplate } from "nostr-tools";
import { decide, type GateContext, type Refusal } from "../../src/gate/decide.js";
import { DeniedReporter, DENIED_REACTION } from "../../src/gate/denied.js";
import type { ChannelInfo } from "../../src/gate/policy.js";
import { agent, owner, teammate, stranger, CHANNEL, DM, mention, fromWire, makeConfig, captureLogger } from "../../kit/queue-helpers.js";
import { sleep } from "../../kit/wait.js";

const DIRECTORY: Record<string, ChannelInfo> = {
  [CHANNEL]: { id: CHANNEL, name: "general", type: "stream" },
  [DM]: { id: DM, name: "dm", type: "dm" },
};

/** The gate's view for these tests: the owner, the channels above, nothing handled yet. */
function gateContext(config: GateContext["config"]): GateContext {
  return { self: agent.pk, owner: owner.pk, config, channel: (id) => DIRECTORY[id], handled: () => false, verify: verifyEvent };
}

function setup(onDenied: "react" | "reply" | "silent", now = () => 0) {
  const config = makeConfig({ defaults: { on_denied: onDenied } });
  const ctx = gateContext(config);
  const { logger, lines } = captureLogger();
  const published: EventTemplate[] = [];
  const reporter = new DeniedReporter({ logger, publish: async (t) => void published.push(t), now, verify: verifyEvent });
  const deny = async (ev = fromWire(mention(stranger, "please help"))) => {
    const d = decide(ev, ctx);
    assert.equal(d.action, "deny");
    await reporter.report(ev, d as Refusal);
    return ev;
  };
  return { deny, published, lines, ctx, reporter };
}

describe("on_denied", () => {
  test("react: a 🔒 reaction on the denied message, plus the log line", async () => {
    const { deny, published, lines } = setup("react");
    const ev = await deny();
    assert.equal(published.length, 1);
    assert.equal(published[0]!.kind, 7);
    assert.equal(published[0]!.content, DENIED_REACTION);
    assert.deepEqual(
      published[0]!.tags.find((t) => t[0] === "e"),
      ["e", ev.id],
    );
    assert.deepEqual(
      published[0]!.tags.find((t) => t[0] === "h"),
      ["h", CHANNEL],
    );
    assert.equal(lines.filter((l) => l.evt === "gate.denied" && l.level === "info").length, 1);
  });

  test("reply: a one-line explanation in the message's thread", async () => {
    const { deny, published } = setup("reply");
    const root = "c".repeat(64);
    const ev = await deny(fromWire(mention(stranger, "in a thread", { tags: [["e", root, "", "reply"]] })));
    assert.equal(published.length, 1);
    const reply = published[0]!;
    assert.equal(reply.kind, 9);
    assert.ok(!reply.content.includes("\n"), "one line");
    assert.match(reply.content, /owner/);
    assert.deepEqual(
      reply.tags.filter((t) => t[0] === "e"),
      [
        ["e", root, "", "root"],
        ["e", ev.id, "", "reply"],
      ],
    );
  });

  test("silent: only the log line", async () => {
    const { deny, published, lines } = setup("silent");
    await deny();
    assert.equal(published.length, 0);
    assert.equal(lines.filter((l) => l.evt === "gate.denied").length, 1);
  });

  test("repeated denials: logged every time, reacted to once per hour per author and channel", async () => {
    let now = 0;
    const { deny, published, lines } = setup("react", () => now);
    for (let i = 0; i < 5; i++) await deny();
    assert.equal(published.length, 1);
    assert.equal(lines.filter((l) => l.evt === "gate.denied").length, 5);
    // Another author in the same channel is answered on their own account.
    await deny(fromWire(mention(teammate, "me too")));
    assert.equal(published.length, 2);
    now += 59 * 60_000;
    await deny();
    assert.equal(published.length, 2, "still inside the hour");
    now += 2 * 60_000;
    await deny();
    assert.equal(published.length, 3, "a new hour, a new reaction");
  });

  test("never in DMs, whatever on_denied says", async () => {
    for (const mode of ["react", "reply"] as const) {
      const { deny, published, lines } = setup(mode);
      await deny(fromWire(mention(stranger, "hi", { channel: DM })));
      assert.equal(published.length, 0, mode);
      assert.equal(lines.filter((l) => l.evt === "gate.denied" && l.reason === "dm-not-owner").length, 1);
    }
  });

  test("a forged event is logged but never answered (its author may not have written it)", async () => {
    const { reporter, published, lines, ctx } = setup("react");
    const real = mention(owner, "deploy");
    const forged = fromWire({ ...real, content: "rm -rf" });
    const d = decide(forged, ctx);
    assert.ok(d.action === "deny" && d.reason === "bad-signature");
    await reporter.report(forged, d);
    assert.equal(published.length, 0);
    assert.equal(lines.filter((l) => l.evt === "gate.denied" && l.reason === "bad-signature").length, 1);
  });

  test("a forged stranger's event the policy denies is verified before any 🔒 and never answered", async () => {
    for (const mode of ["react", "reply"] as const) {
      const { reporter, published, lines, ctx } = setup(mode);
      const forged = fromWire({ ...mention(stranger, "please help"), content: "please help me instead" });
      const d = decide(forged, ctx);
      assert.ok(d.action === "deny" && d.reason === "not-owner", "the policy denies it before any signature check");
      await reporter.report(forged, d);
      assert.equal(published.length, 0, `${mode}: nothing is published for an event its claimed author never signed`);
      assert.deepEqual(
        lines.filter((l) => l.evt === "gate.denied").map((l) => l.reason),
        ["bad-signature"],
        "logged once, as the forgery it is",
      );
    }
  });

  test("a flood of forged events: a bounded number of lines, then one line counting the rest", async () => {
    const { logger, lines } = captureLogger();
    const reporter = new DeniedReporter({
      logger,
      publish: async () => {},
      verify: verifyEvent,
      forgedLogLimit: { perWindow: 3, windowMs: 100 },
    });
    const ctx = gateContext(makeConfig());
    for (let i = 0; i < 10; i++) {
      const forged = fromWire({ ...mention(owner, `deploy ${i}`), content: `rm -rf ${i}` });
      await reporter.report(forged, decide(forged, ctx) as Refusal);
    }
    await reporter.report(fromWire(mention(stranger, "hi")), decide(fromWire(mention(stranger, "hi")), ctx) as Refusal);
    const forgedLines = () => lines.filter((l) => l.evt === "gate.denied" && l.reason === "bad-signature");
    assert.equal(forgedLines().length, 3, "the first three forged events have their line");
    assert.equal(
      lines.filter((l) => l.evt === "gate.denied" && l.reason !== "bad-signature").length,
      1,
      "other denials are never held back",
    );
    await sleep(200); // the throttle's window ends and its one summary line is written
    const summary = lines.filter((l) => l.evt === "gate.denied_suppressed");
    assert.equal(summary.length, 1);
    assert.equal(summary[0]!.suppressed, 7, "the other seven are counted when the window ends");
    assert.equal(summary[0]!.level, "info");
  });

  test("a failing publish is logged, not thrown", async () => {
    const { logger, lines } = captureLogger();
    const reporter = new DeniedReporter({
      logger,
      verify: verifyEvent,
      publish: async () => {
        throw new Error("relay said no");
      },
    });
    const config = makeConfig();
    const ev = fromWire(mention(stranger, "hi"));
    const d = decide(ev, {
      self: agent.pk,
      owner: owner.pk,
      config,
      channel: (id) => DIRECTORY[id],
      handled: () => false,
      verify: verifyEvent,
    });
    await reporter.report(ev, d as Refusal);
    assert.equal(lines.filter((l) => l.evt === "gate.denied_notify_failed").length, 1);
  });

  test("settled() waits for a claimed 🔒 still being published, so a stopping daemon does not drop it", async () => {
    const { logger } = captureLogger();
    let release!: () => void;
    const publishing = new Promise<void>((r) => (release = r));
    const posted: EventTemplate[] = [];
    const reporter = new DeniedReporter({
      logger,
      verify: verifyEvent,
      claimOnce: async () => true,
      publish: async (t) => {
        await publishing;
        posted.push(t);
      },
    });
    const ev = fromWire(mention(stranger, "let me in"));
    const d = decide(ev, gateContext(makeConfig({ defaults: { on_denied: "react" } })));
    void reporter.report(ev, d as Refusal);
    let settled = false;
    const waiting = reporter.settled().then(() => (settled = true));
    await sleep(50);
    assert.equal(settled, false, "not settled while the 🔒 is still being published");
    release();
    await waiting;
    assert.deepEqual(
      posted.map((t) => t.content),
      [DENIED_REACTION],
    );
  });

  test("the rate-limit memory stays bounded", async () => {
    const { logger } = captureLogger("info");
    const published: EventTemplate[] = [];
    const reporter = new DeniedReporter({ logger, publish: async (t) => void published.push(t), maxEntries: 3, verify: verifyEvent });
    const config = makeConfig();
    const ctx = gateContext(config);
    const ev = fromWire(mention(stranger, "hi"));
    const d = decide(ev, ctx) as Refusal;
    // Five distinct channels push the first pair out; it is answered again (bounded, not leaking).
    for (let i = 0; i < 5; i++) await reporter.report(ev, { ...d, channel: { id: `ch-${i}`, type: "stream" } });
    assert.equal((reporter as unknown as { last: Map<string, number> }).last.size, 3);
    await reporter.report(ev, { ...d, channel: { id: "ch-0", type: "stream" } });
    assert.equal(published.length, 6);
  });
});

describe("what a refused author sees, reason by reason", () => {
  const general = DIRECTORY[CHANNEL]!;
  const refusal = (reason: string, o: { onDenied?: "react" | "reply"; level?: "debug" | "info"; action?: "deny" | "drop" } = {}) =>
    ({
      action: o.action ?? "deny",
      reason,
      level: o.level ?? "info",
      channel: general,
      policy: o.onDenied ? { on_denied: o.onDenied } : undefined,
    }) as unknown as Refusal;
  const reporter = (o: { now?: () => number; claimOnce?: (key: string) => Promise<boolean> } = {}) => {
    const { logger, lines } = captureLogger();
    const published: EventTemplate[] = [];
    const r = new DeniedReporter({ logger, publish: async (t) => void published.push(t), verify: verifyEvent, ...o });
    return { r, lines, published };
  };

  test("each reason's reply says what to do; a reaction is the lock", async () => {
    const texts: Record<string, string> = {
      "not-owner": "🔒 I only take requests from my owner in this channel.",
      "not-allowlisted": "🔒 I only take requests from this channel's allowlist; ask my owner to add you.",
      nobody: "🔒 I don't take requests in this channel.",
    };
    for (const [reason, text] of Object.entries(texts)) {
      const { r, published } = reporter();
      await r.report(fromWire(mention(stranger, "help")), refusal(reason, { onDenied: "reply" }));
      assert.deepEqual(
        published.map((p) => p.content),
        [text],
        reason,
      );
    }
    const { r, published } = reporter();
    await r.report(fromWire(mention(stranger, "help")), refusal("not-owner", { onDenied: "react" }));
    assert.deepEqual(
      published.map((p) => p.content),
      ["🔒"],
    );
  });

  test("no answer without a policy that asks for one, nor for a refused workflow wake; a drop logs at its own level", async () => {
    const { r, published, lines } = reporter();
    await r.report(fromWire(mention(stranger, "help")), refusal("not-owner"));
    await r.report(fromWire(mention(stranger, "wake")), refusal("workflow-not-owner", { onDenied: "reply" }));
    await r.report(fromWire(mention(stranger, "chatter")), refusal("no-mention", { action: "drop", level: "debug" }));
    assert.deepEqual(published, []);
    assert.deepEqual(
      lines.filter((l) => l.evt === "gate.denied").map((l) => [l.reason, l.level]),
      [
        ["not-owner", "info"],
        ["workflow-not-owner", "info"],
        ["no-mention", "debug"],
      ],
    );
  });

  test("once per author and channel per window, on a real clock's numbers; in a fleet each author's answer is claimed on its own", async () => {
    let now = Date.parse("2026-12-07T10:00:00Z");
    const { r, published } = reporter({ now: () => now });
    const ask = (who = stranger) => r.report(fromWire(mention(who, "help")), refusal("not-owner", { onDenied: "reply" }));
    await ask();
    now += 1000;
    await ask();
    assert.equal(published.length, 1, "a second ask a second later: no second answer");
    now += 3_600_000 - 1000;
    await ask();
    assert.equal(published.length, 2, "an hour after the first answer: answered again");

    const claimed = new Set<string>();
    const fleet = reporter({ claimOnce: async (key) => !claimed.has(key) && Boolean(claimed.add(key)) });
    for (const who of [stranger, teammate])
      await fleet.r.report(fromWire(mention(who, "help")), refusal("not-owner", { onDenied: "reply" }));
    assert.equal(fleet.published.length, 2, "two authors, two claims, two answers");
  });
});
