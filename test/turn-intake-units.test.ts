/**
 * src/turn/intake.ts in process: relay → gate → queue for one event. Only an accepted
 * mention is queued (a denied one never is: it gets its 🔒 and nothing else), an accepted
 * one is logged once, a message for a running turn joins it or waits, and edits and
 * deletions reach the amendments — after the queue's accept of their target is written. The
 * gate, queue, dispatcher and amendments are small in-process stand-ins that record calls.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import { Intake, type IntakeOptions } from "../src/turn/intake.js";
import type { Decision } from "../src/gate/index.js";
import type { ChannelInfo } from "../src/buzz/directory.js";
import { captureLogger } from "./fixtures/queue-helpers.js";
import { waitFor } from "./fixtures/wait.js";

const OWNER = "0".repeat(63) + "1";
const channel: ChannelInfo = { id: "ch", name: "room", about: "", type: "stream", archived: false };
const policy = (midTurn: string) => ({ mid_turn: midTurn }) as unknown as Extract<Decision, { action: "accept" }>["policy"];
const ev = (id: string, pubkey = "a".repeat(64)): Event => ({
  id,
  pubkey,
  kind: 9,
  created_at: 100,
  content: "@agent hi",
  tags: [],
  sig: "",
});

function intake(
  decision: Decision | ((e: Event) => Decision),
  o: {
    accept?: (e: Event) => Promise<boolean>;
    recheck?: (e: Event) => Promise<Decision> | undefined;
    running?: number;
    canTake?: boolean;
    join?: boolean;
    stopping?: boolean;
    act?: () => Promise<void>;
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
    owner: () => OWNER,
    stopping: () => !!o.stopping,
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
