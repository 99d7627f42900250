/**
 * src/intake/intake.ts in process: relay → gate → queue for one event. Only an accepted
 * mention is queued (a denied one never is: it gets its 🔒 and nothing else), an accepted
 * one is logged once, a message for a running turn joins it or waits, and edits and
 * deletions reach the amendments — after the queue's accept of their target is written. An
 * answer to a waiting question goes to the question, never to the gate, and so does a reply
 * to a question of ours that another daemon sharing the queue may wait on. While the state
 * store cannot be written, intake pauses: events wait undecided, in order, the first is
 * tried again on a growing pause (the test's mock clock), at most 10,000 wait, and closing
 * says how many were not handled. The gate, queue, dispatcher and amendments are small
 * in-process stand-ins that record calls.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import { decisionLabel, Intake, type IntakeOptions } from "../../src/intake/intake.js";
import { QuestionDesk } from "../../src/turn/questions.js";
import { QUESTION_TAG } from "../../src/nostr/events.js";
import type { Decision } from "../../src/gate/index.js";
import type { ChannelInfo } from "../../src/buzz/directory.js";
import { captureLogger } from "../../kit/queue-helpers.js";
import { waitFor } from "../../kit/wait.js";

const OWNER = "0".repeat(63) + "1";
const channel: ChannelInfo = { id: "ch", name: "room", about: "", type: "stream", archived: false };
const policy = (midTurn: string) => ({ mid_turn: midTurn }) as unknown as Extract<Decision, { action: "accept" }>["policy"];
const ev = (id: string, pubkey = "a".repeat(64), more: Partial<Event> = {}): Event => ({
  id,
  pubkey,
  kind: 9,
  created_at: 100,
  content: "@agent hi",
  tags: [],
  sig: "",
  ...more,
});

function intake(
  decision: Decision | ((e: Event) => Decision),
  o: {
    accept?: (e: Event) => Promise<boolean>;
    recheck?: (e: Event) => Promise<Decision> | undefined;
    running?: number;
    canTake?: boolean;
    join?: boolean;
    stopping?: boolean | (() => boolean);
    act?: () => Promise<void>;
    questions?: IntakeOptions["questions"];
    questionTimeout?: () => number;
    self?: string;
    active?: boolean;
  } = {},
) {
  const calls: string[] = [];
  const { logger, lines } = captureLogger("debug");
  const opts: IntakeOptions = {
    gate: {
      decide: (e) => (typeof decision === "function" ? decision(e) : decision),
      recheck: (e) => o.recheck?.(e),
      act: async (e, d) => {
        calls.push(`act ${e.id} ${d.action}`);
        await o.act?.();
      },
    },
    scheduler: {
      accept: (e, ch) => (calls.push(`accept ${e.id} ${ch}`), o.accept ? o.accept(e) : Promise.resolve(true)),
      scopeOf: (e, ch) => ({ key: `${ch}/${e.id}`, channel: ch }) as ReturnType<IntakeOptions["scheduler"]["scopeOf"]>,
      runningTurn: (key) => (calls.push(`running? ${key}`), o.running),
      joinRunning: (turn, id, deliver) => {
        calls.push(`join ${turn} ${id}`);
        if (o.join === false) {
          calls.push(`deliver → ${deliver()}`);
          return;
        }
        deliver();
      },
    },
    dispatcher: {
      canTake: (turn, e) => (calls.push(`canTake ${turn} ${e?.id}`), o.canTake ?? true),
      take: (turn, e, how) => void calls.push(`take ${turn} ${e.id} ${how}`),
    },
    amendments: {
      edit: async (e, target, ch, mode) => void calls.push(`edit ${e.id} → ${target} in ${ch} (${mode})`),
      delete: async (e, targets) => void calls.push(`delete ${e.id} → ${targets.join(",")}`),
    },
    local: {
      noteSeen: (ch, at) => void calls.push(`seen ${ch} ${at}`),
      markAccepted: (id) => void calls.push(`handled ${id}`),
    },
    questions: o.questions,
    questionTimeout: o.questionTimeout,
    active: o.active ? { mark: (root, ch) => void calls.push(`mark ${root} ${ch}`) } : undefined,
    self: o.self,
    owner: () => OWNER,
    stopping: () => (typeof o.stopping === "function" ? o.stopping() : !!o.stopping),
    onReceived: (e) => void calls.push(`received ${e.id}`),
    onDecided: (e, d) => void calls.push(`decided ${e.id} ${d.action}`),
    logger,
  };
  return { intake: new Intake(opts), calls, lines };
}

const accept = (midTurn = "steer", sibling?: unknown): Decision =>
  ({ action: "accept", channel, policy: policy(midTurn), ...(sibling ? { sibling } : {}) }) as Decision;

describe("what is queued", () => {
  test("an accepted mention is queued in its channel and logged once as accepted", async () => {
    const { intake: i, calls, lines } = intake(accept());
    await i.handle(ev("e1"));
    // Noted as handled before the write (an edit right behind it is an amendment); the cursor moves once the queue has it.
    assert.deepEqual(calls, [
      "received e1",
      "act e1 accept",
      "decided e1 accept",
      "handled e1",
      "accept e1 ch",
      "seen ch 100",
      "running? ch/e1",
    ]);
    const accepted = lines.filter((l) => l.evt === "gate.accepted");
    assert.equal(accepted.length, 1);
    assert.deepEqual([accepted[0]!.event, accepted[0]!.channel, accepted[0]!.msg], ["e1", "ch", "mention accepted"]);
    assert.match(String(accepted[0]!.author), /^npub1/);
  });

  test("a denied mention is never queued: only the gate's action (🔒) happens", async () => {
    const { intake: i, calls, lines } = intake({ action: "deny", reason: "not-owner", level: "info", channel } as Decision);
    await i.handle(ev("stranger"));
    assert.deepEqual(calls, ["received stranger", "act stranger deny", "decided stranger deny"]);
    assert.ok(!lines.some((l) => l.evt === "gate.accepted"));
  });

  test("a dropped event is not queued either", async () => {
    const { intake: i, calls } = intake({ action: "drop", reason: "own-event", level: "debug" } as Decision);
    await i.handle(ev("own"));
    assert.ok(!calls.some((c) => c.startsWith("accept")));
  });

  test("a control command is the gate's action, never a queued mention", async () => {
    const { intake: i, calls } = intake({ action: "control", command: "!cancel", channel } as unknown as Decision);
    await i.handle(ev("cmd"));
    assert.deepEqual(calls, ["received cmd", "act cmd control", "decided cmd control"]);
  });

  test("an event the queue already had (a replay) is not logged as accepted again; only the queue's join may take it", async () => {
    // The queue joins a waiting event only, once (queue-state-store: "heard again"): the
    // replay of an event already in the turn changes nothing there.
    const { intake: i, calls, lines } = intake(accept(), { accept: async () => false, running: 4 });
    await i.handle(ev("again"));
    assert.ok(!lines.some((l) => l.evt === "gate.accepted"));
    assert.deepEqual(
      calls.filter((c) => c.startsWith("join") || c.startsWith("take")),
      ["join 4 again", "take 4 again steer"],
    );
  });

  test("a sibling agent's mention is accepted and logged as such", async () => {
    const { intake: i, lines } = intake(accept("steer", { name: "helper" }));
    await i.handle(ev("sib"));
    const line = lines.find((l) => l.evt === "gate.accepted")!;
    assert.deepEqual(line.sibling, { name: "helper" });
    assert.equal(line.msg, "mention accepted from a sibling agent");
  });

  test("a decision that needs a look-up is awaited", async () => {
    const deny = { action: "deny", reason: "not-owner", level: "info", channel } as Decision;
    const { intake: i, calls } = intake(deny, { recheck: async () => accept() });
    await i.handle(ev("later"));
    assert.ok(calls.includes("accept later ch"));
  });

  test("once a shutdown began, events are not decided (a restart replays them)", async () => {
    const { intake: i, calls } = intake(accept(), { stopping: true });
    await i.handle(ev("late"));
    assert.deepEqual(calls, []);
  });

  test("a failure while deciding is logged with the event, not thrown", async () => {
    const { intake: i, lines } = intake(() => {
      throw new Error("boom");
    });
    await i.handle(ev("bad"));
    const line = lines.find((l) => l.evt === "intake.error")!;
    assert.deepEqual([line.event, line.err, line.msg], ["bad", "Error: boom", "could not handle an event"]);
  });
});

describe("the accept is the queue's", () => {
  test("noted as handled at once, the cursor moved, and the accepted line once the write is done", async () => {
    let done!: (fresh: boolean) => void;
    const { intake: i, calls, lines } = intake(accept(), { accept: () => new Promise<boolean>((r) => (done = r)) });
    const handled = i.handle(ev("f1"));
    await waitFor(() => calls.includes("handled f1"), { what: "the note" });
    assert.ok(!lines.some((l) => l.evt === "gate.accepted"), "not before the database said so");
    assert.ok(!calls.includes("seen ch 100"), "the cursor stays before it until it is stored: a crash meanwhile replays it");
    done(true);
    await handled;
    assert.ok(lines.some((l) => l.evt === "gate.accepted" && l.event === "f1"));
    assert.ok(calls.includes("seen ch 100"), "this daemon's own cursor moves");
  });

  test("an event another daemon stored first may still join this daemon's running turn", async () => {
    const { intake: i, calls, lines } = intake(accept(), { accept: async () => false, running: 9 });
    await i.handle(ev("f2"));
    assert.ok(!lines.some((l) => l.evt === "gate.accepted"));
    assert.ok(calls.includes("join 9 f2"));
  });

  test("an edit right behind its target waits for the target's accept to be written", async () => {
    let done!: (fresh: boolean) => void;
    const decisions = new Map<string, Decision>([
      ["t1", accept()],
      ["ed1", { action: "amend", amend: "edit", targets: ["t1"], channel, policy: policy("queue") } as Decision],
    ]);
    const { intake: i, calls } = intake((e) => decisions.get(e.id)!, {
      accept: () => new Promise<boolean>((r) => (done = r)),
    });
    const target = i.handle(ev("t1"));
    await waitFor(() => calls.includes("handled t1"), { what: "the target's note" });
    await i.handle(ev("ed1"));
    assert.ok(!calls.some((c) => c.startsWith("edit")), "the edit waits for the accept");
    done(true);
    await target;
    await waitFor(() => calls.some((c) => c.startsWith("edit ed1")), { what: "the edit once the accept is written" });
    assert.ok(calls.includes("edit ed1 → t1 in ch (queue)"));
  });
});

describe("amendments", () => {
  test("an edit goes to the amendments with its target and the channel's mid_turn; the cursor moves past it", async () => {
    const { intake: i, calls } = intake({
      action: "amend",
      amend: "edit",
      targets: ["t"],
      channel,
      policy: policy("interrupt"),
    } as Decision);
    await i.handle(ev("ed"));
    await waitFor(() => calls.some((c) => c.startsWith("edit")));
    assert.ok(calls.includes("edit ed → t in ch (interrupt)"));
    assert.ok(calls.includes("seen ch 100"));
    assert.ok(!calls.some((c) => c.startsWith("accept")));
  });

  test("a deletion goes to the amendments with all its targets", async () => {
    const { intake: i, calls } = intake({
      action: "amend",
      amend: "delete",
      targets: ["t1", "t2"],
      channel,
      policy: policy("steer"),
    } as Decision);
    await i.handle(ev("del"));
    await waitFor(() => calls.some((c) => c.startsWith("delete")));
    assert.ok(calls.includes("delete del → t1,t2"));
  });

  test("a failed amendment is logged, naming what it was", async () => {
    const { intake: i, lines } = intake({ action: "amend", amend: "delete", targets: ["t"], channel, policy: policy("steer") } as Decision);
    (i as unknown as { o: IntakeOptions }).o.amendments.delete = async () => {
      throw new Error("store gone");
    };
    await i.handle(ev("del"));
    const line = await waitFor(() => lines.find((l) => l.evt === "intake.error"));
    assert.deepEqual([line.event, line.msg], ["del", "could not handle a deletion"]);
  });
});

describe("a message for a running turn", () => {
  test("steer: it joins the running turn and goes to the agent", async () => {
    const { intake: i, calls } = intake(accept("steer"), { running: 5 });
    await i.handle(ev("m1"));
    assert.ok(calls.includes("join 5 m1"));
    assert.ok(calls.includes("take 5 m1 steer"));
  });

  test("interrupt, and owner-interrupt from the owner: it supersedes", async () => {
    const a = intake(accept("interrupt"), { running: 5 });
    await a.intake.handle(ev("m2"));
    assert.ok(a.calls.includes("take 5 m2 interrupt"));
    const b = intake(accept("owner-interrupt"), { running: 5 });
    await b.intake.handle(ev("m3", OWNER));
    assert.ok(b.calls.includes("take 5 m3 interrupt"));
  });

  test("queue, owner-interrupt from someone else, or a turn that cannot take it: it waits for the next turn", async () => {
    for (const [mode, who, canTake] of [
      ["queue", "a".repeat(64), true],
      ["owner-interrupt", "b".repeat(64), true],
      ["steer", "a".repeat(64), false],
    ] as const) {
      const { intake: i, calls, lines } = intake(accept(mode), { running: 5, canTake });
      await i.handle(ev("w", who));
      assert.ok(!calls.some((c) => c.startsWith("join") || c.startsWith("take")), `${mode}: ${calls.join("; ")}`);
      const queued = lines.find((l) => l.evt === "queue.mid_turn_queued")!;
      assert.deepEqual([queued.event, queued.turn, queued.mode], ["w", 5, mode]);
    }
  });

  test("no turn running in its scope: nothing to join", async () => {
    const { intake: i, calls } = intake(accept("steer"));
    await i.handle(ev("idle"));
    assert.ok(!calls.some((c) => c.startsWith("join") || c.startsWith("canTake")));
  });

  test("a join is written first: delivered then only if the turn can still take it", async () => {
    const a = intake(accept("steer"), { running: 5, join: false, canTake: true });
    await a.intake.handle(ev("j1"));
    assert.ok(a.calls.includes("take 5 j1 steer"));
    assert.ok(a.calls.includes("deliver → true"));
    assert.equal(a.calls.filter((c) => c.startsWith("take")).length, 1, "given to the agent once");

    let can = true;
    const b = intake(accept("steer"), { running: 5, join: false });
    (b.intake as unknown as { o: IntakeOptions }).o.dispatcher.canTake = () => {
      const now = can;
      can = false; // the turn ends between the check and the database's answer
      return now;
    };
    await b.intake.handle(ev("j2"));
    assert.ok(b.calls.includes("deliver → false"));
    assert.ok(!b.calls.some((c) => c.startsWith("take")));
  });
});

describe("what is counted and logged for an accepted event", () => {
  test("a decision is counted as workflow or continued when it is one", () => {
    const d = accept() as Extract<Decision, { action: "accept" }>;
    assert.equal(decisionLabel({ ...d, workflowOwner: OWNER }), "workflow");
    assert.equal(decisionLabel({ ...d, continued: "thread" }), "continued");
  });

  test("a message that continues a conversation is queued and logged as continued, with how, not as a mention", async () => {
    const { intake: i, calls, lines } = intake({ ...accept(), continued: "channel" } as Decision);
    await i.handle(ev("c1"));
    assert.ok(calls.includes("accept c1 ch"));
    assert.ok(!lines.some((l) => l.evt === "gate.accepted"));
    const line = lines.find((l) => l.evt === "gate.continued")!;
    assert.deepEqual([line.level, line.reason, line.event, line.channel], ["info", "channel", "c1", "ch"]);
  });

  test("a continued message the queue already had is not logged again", async () => {
    const { intake: i, lines } = intake({ ...accept(), continued: "thread" } as Decision, { accept: async () => false });
    await i.handle(ev("c2"));
    assert.ok(!lines.some((l) => l.evt === "gate.continued" || l.evt === "gate.accepted"));
  });

  test("an accept once written is not waited on any more: the writes in progress do not grow with every mention", async () => {
    const { intake: i } = intake(accept());
    await i.handle(ev("w1"));
    await i.handle(ev("w2"));
    assert.equal((i as unknown as { accepting: Map<string, unknown> }).accepting.size, 0);
  });
});

describe("the conversations the agent is in", () => {
  const SELF = "5".repeat(64);
  const deny = { action: "deny", reason: "not-owner", level: "info", channel } as Decision;
  const drop = { action: "drop", reason: "own-event", level: "debug" } as Decision;
  const marks = async (decision: Decision, e: Event) => {
    const { intake: i, calls } = intake(decision, { active: true, self: SELF });
    await i.handle(e);
    return calls.filter((c) => c.startsWith("mark"));
  };

  test("a message it acts on marks its thread and channel active", async () => {
    const root = "c".repeat(64);
    const reply = ev("r1", "a".repeat(64), {
      tags: [
        ["h", "ch"],
        ["e", root, "", "root"],
      ],
    });
    assert.deepEqual(await marks(accept(), reply), [`mark ${root} ch`]);
  });

  test("a forum post it acts on marks it too", async () => {
    assert.deepEqual(await marks(accept(), ev("p1", "a".repeat(64), { kind: 45001, tags: [["h", "ch"]] })), ["mark p1 ch"]);
  });

  test("its own message marks the conversation even though the gate drops it", async () => {
    assert.deepEqual(await marks(drop, ev("own1", SELF, { tags: [["h", "ch"]] })), ["mark own1 ch"]);
  });

  test("a message it does not act on, or an event that is no message, marks nothing", async () => {
    assert.deepEqual(await marks(deny, ev("d1", "b".repeat(64), { tags: [["h", "ch"]] })), []);
    assert.deepEqual(await marks(accept(), ev("x1", "a".repeat(64), { kind: 7, tags: [["h", "ch"]] })), []);
  });
});

describe("answers to a waiting question", () => {
  test("an answer is taken by the waiting question, never decided or queued; its channel's cursor moves past it", async () => {
    const offered: unknown[] = [];
    const { intake: i, calls } = intake(accept(), {
      questionTimeout: () => 30_000,
      questions: { offer: (e, o) => (offered.push([e.id, o]), true) },
    });
    await i.handle(ev("ans", "a".repeat(64), { tags: [["h", "ch"]] }));
    assert.deepEqual(offered, [["ans", { timeoutMs: 30_000 }]]);
    assert.deepEqual(calls, ["received ans", "seen ch 100"]);
  });

  test("a reply to a plain question of ours that no question here waits on: taken when other daemons share the queue (one of them may wait on it), decided as a mention when none do", async () => {
    const self = "c".repeat(64);
    const at = Math.floor(Date.now() / 1000);
    for (const shared of [true, false]) {
      const desk = new QuestionDesk({
        self,
        relay: { query: async () => [] } as never,
        out: { publish: async () => undefined as never, signal: () => undefined },
        verify: () => true,
        logger: captureLogger().logger,
        queue: { shared },
      });
      const { intake: i, calls } = intake(accept(), { questions: desk, questionTimeout: () => 60_000, self });
      await i.handle(ev("q1", self, { created_at: at, tags: [["h", "ch"], [...QUESTION_TAG]] }));
      await i.handle(
        ev("r1", "a".repeat(64), {
          created_at: at,
          tags: [
            ["h", "ch"],
            ["e", "q1", "", "reply"],
          ],
        }),
      );
      assert.equal(calls.includes("accept r1 ch"), !shared, shared ? "shared: not queued" : "one daemon: queued as a mention");
      assert.equal(calls.includes("decided r1 accept"), !shared);
    }
  });

  test("an event no question waits for is decided as usual", async () => {
    const { intake: i, calls } = intake(accept(), { questions: { offer: () => false } });
    await i.handle(ev("m"));
    assert.ok(calls.includes("accept m ch"));
  });
});

describe("a failed amendment", () => {
  test("a failed edit is logged as an edit", async () => {
    const { intake: i, lines } = intake({ action: "amend", amend: "edit", targets: ["t"], channel, policy: policy("steer") } as Decision);
    (i as unknown as { o: IntakeOptions }).o.amendments.edit = async () => {
      throw new Error("store gone");
    };
    await i.handle(ev("ed"));
    const line = await waitFor(() => lines.find((l) => l.evt === "intake.error"));
    assert.deepEqual([line.level, line.event, line.msg], ["error", "ed", "could not handle an edit"]);
  });
});

describe("while the state store cannot be written", () => {
  const diskFull = () => Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });
  /** Lets every promise job run (the stand-ins answer in promise jobs only; the retry timer is the test's mock). */
  const settle = () => new Promise<void>((r) => setImmediate(r));
  const accepts = (calls: string[]) => calls.filter((c) => c.startsWith("accept"));
  const accepted = (lines: Record<string, any>[]) => lines.filter((l) => l.evt === "gate.accepted").map((l) => l.event);
  /** A queue whose accept of each event the test answers. */
  const answered = () => {
    const waiting = new Map<string, { ok: (fresh: boolean) => void; fail: (err: unknown) => void }>();
    const accept = (e: Event) => new Promise<boolean>((ok, fail) => waiting.set(e.id, { ok, fail }));
    return { accept, answer: (id: string) => waiting.get(id)! };
  };

  test("intake pauses: later events wait undecided, the first is tried again with a growing pause, then all follow in order", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout", "Date"], now: 1_000_000 });
    let full = true;
    const {
      intake: i,
      calls,
      lines,
    } = intake(accept(), {
      accept: async () => {
        if (full) throw diskFull();
        return true;
      },
    });
    await i.handle(ev("e1"));
    assert.equal(i.pausedFor, "disk full");
    const paused = lines.filter((l) => l.evt === "intake.paused");
    assert.equal(paused.length, 1);
    assert.deepEqual(
      [paused[0]!.level, paused[0]!.reason, paused[0]!.event, paused[0]!.err],
      ["warn", "disk full", "e1", "database or disk is full"],
    );

    calls.length = 0;
    await i.handle(ev("e2"));
    await i.handle(ev("e3"));
    assert.deepEqual(calls, ["received e2", "received e3"], "not decided: the cursor stays before them");

    calls.length = 0;
    t.mock.timers.tick(499);
    await settle();
    assert.deepEqual(calls, []);
    t.mock.timers.tick(1);
    await settle();
    assert.deepEqual(accepts(calls), ["accept e1 ch"], "only the first waiting event is tried again");
    assert.equal(i.pausedFor, "disk full");
    assert.equal(lines.filter((l) => l.evt === "intake.paused").length, 1, "the pause is logged once");

    calls.length = 0;
    full = false;
    t.mock.timers.tick(999);
    await settle();
    assert.deepEqual(calls, [], "the second try waits twice as long");
    t.mock.timers.tick(1);
    await settle();
    assert.deepEqual(accepts(calls), ["accept e1 ch", "accept e2 ch", "accept e3 ch"]);
    assert.deepEqual(accepted(lines), ["e1", "e2", "e3"]);
    assert.equal(i.pausedFor, undefined);
    const resumed = lines.filter((l) => l.evt === "intake.resumed");
    assert.equal(resumed.length, 1);
    assert.deepEqual([resumed[0]!.level, resumed[0]!.reason, resumed[0]!.paused_ms], ["info", "disk full", 1500]);

    calls.length = 0;
    await i.handle(ev("e4"));
    assert.deepEqual(accepts(calls), ["accept e4 ch"], "taken at once again");
  });

  test("an event tried again while intake is paused counts as one gate decision (buzz_bridge_gate_decisions_total)", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout", "Date"], now: 1_000_000 });
    let failures = 2;
    const { intake: i, calls } = intake(accept(), {
      accept: async () => {
        if (failures-- > 0) throw diskFull();
        return true;
      },
    });
    await i.handle(ev("e1"));
    for (const ms of [500, 1000]) {
      t.mock.timers.tick(ms);
      await settle();
    }
    assert.equal(i.pausedFor, undefined, "resumed after the third try");
    assert.equal(accepts(calls).length, 3, "tried three times");
    assert.deepEqual(
      calls.filter((c) => c.startsWith("decided")),
      ["decided e1 accept"],
      "decided three times, counted once",
    );
  });

  test("events on their way when intake paused wait too, also one that fails while the first is tried again", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout", "Date"], now: 1_000_000 });
    const q = answered();
    const { intake: i, calls, lines } = intake(accept(), { accept: q.accept });
    const h1 = i.handle(ev("e1"));
    const h2 = i.handle(ev("e2"));
    const h3 = i.handle(ev("e3"));
    q.answer("e1").fail(diskFull());
    await h1;
    q.answer("e2").fail(diskFull());
    await h2;
    calls.length = 0;
    t.mock.timers.tick(500);
    await settle();
    assert.deepEqual(accepts(calls), ["accept e1 ch"]);
    q.answer("e3").fail(diskFull());
    await h3;
    q.answer("e1").ok(true);
    await settle();
    q.answer("e2").ok(true);
    await settle();
    q.answer("e3").ok(true);
    await settle();
    assert.deepEqual(accepts(calls), ["accept e1 ch", "accept e2 ch", "accept e3 ch"]);
    assert.deepEqual(accepted(lines), ["e1", "e2", "e3"]);
    assert.equal(lines.filter((l) => l.evt === "intake.paused").length, 1);
    assert.equal(i.pausedFor, undefined);
  });

  test("a waiting event that fails for another reason is logged and passed over; the rest follow", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout", "Date"], now: 1_000_000 });
    let full = true;
    const {
      intake: i,
      calls,
      lines,
    } = intake(accept(), {
      accept: async (e) => {
        if (full) throw diskFull();
        if (e.id === "e1") throw new Error("bug");
        return true;
      },
    });
    await i.handle(ev("e1"));
    await i.handle(ev("e2"));
    calls.length = 0;
    full = false;
    t.mock.timers.tick(500);
    await settle();
    const errors = lines.filter((l) => l.evt === "intake.error");
    assert.deepEqual(
      errors.map((l) => [l.event, l.err]),
      [["e1", "Error: bug"]],
    );
    assert.deepEqual(accepts(calls), ["accept e1 ch", "accept e2 ch"]);
    assert.deepEqual(accepted(lines), ["e2"]);
    assert.equal(i.pausedFor, undefined);
  });

  test("an answer that waited is taken by its question once intake resumes, and intake resumes", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout", "Date"], now: 1_000_000 });
    let full = true;
    const offered: string[] = [];
    const { intake: i, lines } = intake(accept(), {
      accept: async () => {
        if (full) throw diskFull();
        return true;
      },
      questions: { offer: (e) => (offered.push(e.id), e.id === "answer") },
    });
    await i.handle(ev("e1"));
    await i.handle(ev("answer", "a".repeat(64), { tags: [["h", "ch"]] }));
    assert.deepEqual(offered, ["e1"], "the answer waits like any event");
    full = false;
    t.mock.timers.tick(500);
    await settle();
    assert.deepEqual(offered, ["e1", "e1", "answer"]);
    assert.equal(i.pausedFor, undefined);
    assert.equal(lines.filter((l) => l.evt === "intake.resumed").length, 1);
  });

  test("a shutdown while the waiting events are tried again leaves the rest undecided (the relay sends them after the restart)", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout", "Date"], now: 1_000_000 });
    let full = true;
    let stopping = false;
    const {
      intake: i,
      calls,
      lines,
    } = intake(accept(), {
      stopping: () => stopping,
      accept: async () => {
        if (full) throw diskFull();
        stopping = true; // the shutdown begins while the first one is written
        return true;
      },
    });
    await i.handle(ev("e1"));
    await i.handle(ev("e2"));
    full = false;
    calls.length = 0;
    t.mock.timers.tick(500);
    await settle();
    assert.deepEqual(accepts(calls), ["accept e1 ch"]);
    assert.ok(!lines.some((l) => l.evt === "intake.resumed"));
  });

  test("closing stops the tries and says how many events were not handled", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout", "Date"], now: 1_000_000 });
    const {
      intake: i,
      calls,
      lines,
    } = intake(accept(), {
      accept: async () => {
        throw diskFull();
      },
    });
    for (const id of ["e1", "e2", "e3"]) await i.handle(ev(id));
    i.close();
    const unhandled = lines.filter((l) => l.evt === "intake.unhandled");
    assert.deepEqual(
      unhandled.map((l) => [l.level, l.reason, l.count]),
      [["info", "stopping", 3]],
    );
    calls.length = 0;
    t.mock.timers.tick(60_000);
    await settle();
    assert.deepEqual(calls, [], "not tried again");
  });

  test("closing while intake takes events says nothing", async () => {
    const { intake: i, lines } = intake(accept());
    await i.handle(ev("e1"));
    i.close();
    assert.ok(!lines.some((l) => l.evt === "intake.unhandled"));
  });

  test("at most 10,000 events wait; one more is not handled, and says so", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout", "Date"], now: 1_000_000 });
    const { intake: i, lines } = intake(accept(), {
      accept: async () => {
        throw diskFull();
      },
    });
    await i.handle(ev("first"));
    for (let n = 1; n <= 10_000; n++) await i.handle(ev(`w${n}`));
    const unhandled = lines.filter((l) => l.evt === "intake.unhandled");
    assert.deepEqual(
      unhandled.map((l) => [l.level, l.reason, l.event]),
      [["info", "too-many-waiting", "w10000"]],
    );
    i.close();
    assert.equal(lines.find((l) => l.evt === "intake.unhandled" && l.reason === "stopping")!.count, 10_000);
  });
});
