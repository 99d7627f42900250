/**
 * The connection-lifetime planner (docs/protocol.md §1, "Connection lifetime"), on node:test's
 * mock clock: when a socket is replaced relative to the relay's deadline, and what is done to
 * the sockets the relay sees — a successor opened and taken over (make-before-break), the old
 * one retired until the deadline, or the socket closed and reopened at a quiet moment. The
 * clock is the behaviour here (a fifth of the lifetime ahead, at least 1 s, at most 30 s).
 * Against a real relay: test/relay-lifetime.test.ts.
 */
import { afterEach, beforeEach, describe, mock, test } from "node:test";
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { LifetimePlanner, leadFor } from "../../src/relay/lifetime.js";
import type { RelayConnection } from "../../src/relay/connection.js";
import { captureLogger } from "../../kit/queue-helpers.js";

/** A socket as the planner sees it, recording what is done to it. */
class FakeSocket extends EventEmitter {
  openedAt: number | undefined = Date.now();
  authenticated = true;
  busy = false;
  state = "subscribed";
  done: string[] = [];
  recycle() {
    this.done.push("recycle");
  }
  retire(ms: number) {
    this.done.push(`retire ${ms}`);
  }
  stop() {
    this.done.push("stop");
  }
}

/** A planner over one socket; `free` frames in the budget against 3 needed; `successor` is how a new socket starts. */
function planner(o: { free?: number; successor?: () => FakeSocket; tooShort?: (ms: number) => boolean } = {}) {
  const first = new FakeSocket();
  const spawned: FakeSocket[] = [];
  const h = {
    current: first,
    spawned,
    first,
    ...captureLogger(),
  };
  const p = new LifetimePlanner({
    current: () => h.current as unknown as RelayConnection,
    spawn: () => {
      const s = o.successor?.() ?? new FakeSocket();
      spawned.push(s);
      return s as unknown as RelayConnection;
    },
    adopt: (n) => (h.current = n as unknown as FakeSocket),
    framesToSubscribe: () => 3,
    budgetFree: () => o.free ?? 10,
    tooShortToPlan: o.tooShort,
    logger: h.logger,
  });
  return { p, h };
}

/** A socket opening now, not yet subscribed. */
function connecting(): FakeSocket {
  const s = new FakeSocket();
  s.state = "connecting";
  return s;
}

/** Lets the planner's promises settle between clock steps. */
const settle = () => new Promise<void>((r) => setImmediate(r));

async function tick(ms: number) {
  mock.timers.tick(ms);
  await settle();
}

describe("the lifetime planner, on the mock clock", () => {
  beforeEach(() => mock.timers.enable({ apis: ["setTimeout", "Date"], now: 100_000 }));
  afterEach(() => mock.timers.reset());

  test("a socket is replaced a fifth of the lifetime before the deadline: at least 1 s (half of a shorter lifetime), at most 30 s", () => {
    assert.equal(leadFor(60_000), 12_000);
    assert.equal(leadFor(100_000), 20_000);
    assert.equal(leadFor(600_000), 30_000, "at most 30 s");
    assert.equal(leadFor(3000), 1000, "at least 1 s");
    assert.equal(leadFor(1000), 500, "half of a lifetime under 2 s");
  });

  test("with room in the budget: a successor opens at the planned moment, takes over once subscribed, and the old socket is retired until the deadline", async () => {
    const { p, h } = planner({ successor: connecting });
    p.setLifetime(60_000); // due 48 s after opening
    await tick(47_999);
    assert.equal(h.spawned.length, 0, "not before the planned moment");
    await tick(1);
    assert.equal(h.spawned.length, 1, "the successor opens at 48 s");
    const pending = h.spawned[0]!;
    assert.equal(h.current, h.first, "the old socket serves until the successor is subscribed");
    await tick(2000);
    pending.emit("state", "authenticated");
    await settle();
    assert.equal(h.current, h.first, "authenticated is not yet subscribed");
    pending.emit("state", "subscribed");
    await settle();
    assert.equal(h.current, pending, "the successor took over");
    assert.deepEqual(h.first.done, ["retire 10000"], "the old socket closes by the deadline (10 s left)");
    assert.deepEqual(pending.done, []);
    assert.deepEqual(p.metrics, { makeBeforeBreak: 1, quietBreak: 0, successorFailed: 0 });
    assert.deepEqual(
      h.lines.filter((l) => l.evt === "relay.rotated").map((l) => l.method),
      ["make-before-break"],
    );
    // The successor's own deadline counts from when it opened (2 s before it took over).
    await tick(45_999);
    assert.equal(h.spawned.length, 1);
    await tick(1);
    assert.equal(h.spawned.length, 2, "the successor is replaced in its turn");
    p.stop();
    assert.deepEqual(h.spawned[1]!.done, ["stop"], "a successor on its way is stopped with the planner");
  });

  test("a successor refused, closed or not subscribed in time is stopped, and the socket is reopened at a quiet moment instead", async () => {
    for (const fail of ["auth-failed", "closed", "stopped", "late"] as const) {
      const next = new FakeSocket();
      next.state = "connecting";
      const { p, h } = planner({ successor: () => next });
      p.setLifetime(60_000);
      await tick(48_000);
      assert.equal(h.spawned.length, 1, fail);
      if (fail === "auth-failed") next.emit("auth-failed");
      else if (fail === "late") {
        await tick(11_949);
        assert.deepEqual(next.done, [], "still time until 50 ms before the deadline");
        await tick(1);
      } else next.emit("state", fail);
      await settle();
      assert.deepEqual(next.done, ["stop"], `${fail}: the successor is stopped`);
      assert.equal(h.current, h.first, `${fail}: never adopted`);
      assert.deepEqual(h.first.done, ["recycle"], `${fail}: the idle socket is reopened at once`);
      assert.deepEqual(p.metrics, { makeBeforeBreak: 0, quietBreak: 1, successorFailed: 1 }, fail);
      assert.equal(h.lines.filter((l) => l.evt === "relay.successor_failed").length, 1, fail);
      p.stop();
    }
  });

  test("without room in the budget: no second socket; a busy socket is cut at its first quiet moment, or 50 ms before the deadline", async () => {
    const quiet = planner({ free: 2 });
    quiet.h.first.busy = true;
    quiet.p.setLifetime(60_000);
    await tick(48_000);
    assert.equal(quiet.h.spawned.length, 0, "3 frames needed, 2 free: no successor");
    assert.deepEqual(quiet.h.first.done, [], "a socket carrying a publish is not cut");
    await tick(5000);
    quiet.h.first.busy = false;
    quiet.h.first.emit("idle");
    assert.deepEqual(quiet.h.first.done, ["recycle"], "cut at the quiet moment");
    quiet.h.first.emit("idle");
    await tick(10_000);
    assert.deepEqual(quiet.h.first.done, ["recycle"], "once");
    assert.deepEqual(quiet.p.metrics, { makeBeforeBreak: 0, quietBreak: 1, successorFailed: 0 });
    assert.deepEqual(
      quiet.h.lines.filter((l) => l.evt === "relay.rotated").map((l) => [l.method, l.lifetime_ms]),
      [["quiet-break", 60_000]],
    );
    quiet.p.stop();

    const busy = planner({ free: 3 - 1 });
    busy.h.first.busy = true;
    busy.p.setLifetime(60_000);
    await tick(48_000 + 11_949);
    assert.deepEqual(busy.h.first.done, [], "still busy, still time");
    await tick(1);
    assert.deepEqual(busy.h.first.done, ["recycle"], "cut 50 ms before the deadline however busy");
    busy.p.stop();

    const exact = planner({ free: 3 });
    exact.p.setLifetime(60_000);
    await tick(48_000);
    assert.equal(exact.h.spawned.length, 1, "exactly the frames needed is room enough");
    exact.p.stop();
  });

  test("nothing is planned without a stated lifetime, for a socket not open or not authenticated, or a lifetime too short to plan", async () => {
    const none = planner();
    none.p.setLifetime(undefined);
    const unopened = planner();
    unopened.h.first.openedAt = undefined;
    unopened.p.setLifetime(60_000);
    const unauthenticated = planner();
    unauthenticated.h.first.authenticated = false;
    unauthenticated.p.setLifetime(60_000);
    const asked: number[] = [];
    const short = planner({ tooShort: (ms) => (asked.push(ms), true) });
    short.p.setLifetime(60_000);
    await tick(120_000);
    for (const [name, x] of Object.entries({ none, unopened, unauthenticated, short })) {
      assert.equal(x.h.spawned.length, 0, name);
      assert.deepEqual(x.h.first.done, [], name);
    }
    assert.deepEqual(asked, [60_000]);
    assert.equal(none.p.lifetime, undefined);
    assert.equal(short.p.lifetime, 60_000);

    // Authenticated later: planned from when the socket opened.
    unauthenticated.h.first.authenticated = true;
    unauthenticated.p.authenticated(unauthenticated.h.first as unknown as RelayConnection);
    await tick(0);
    assert.equal(unauthenticated.h.spawned.length, 1, "its planned moment has passed: replaced at once");
    for (const x of [none, unopened, unauthenticated, short]) x.p.stop();
  });

  test("a new lifetime replans; the same one, or another socket authenticating, changes nothing; a stopped planner does nothing more", async () => {
    const { p, h } = planner();
    p.setLifetime(60_000);
    await tick(30_000);
    p.setLifetime(60_000);
    p.authenticated(new FakeSocket() as unknown as RelayConnection);
    await tick(18_000);
    assert.equal(h.spawned.length, 1, "still due 48 s after opening");
    p.stop();

    const re = planner();
    re.p.setLifetime(600_000);
    await tick(30_000);
    re.p.setLifetime(20_000); // due 16 s after opening: already past
    await tick(0);
    assert.equal(re.h.spawned.length, 1, "the shorter lifetime's moment has passed: replaced at once");
    re.p.stop();

    const stopped = planner();
    const pending = new FakeSocket();
    pending.state = "connecting";
    const withPending = planner({ successor: () => pending });
    withPending.p.setLifetime(60_000);
    stopped.p.setLifetime(60_000);
    stopped.p.stop();
    await tick(48_000);
    assert.equal(stopped.h.spawned.length, 0, "stopped before its moment: nothing");
    withPending.p.stop();
    assert.deepEqual(pending.done, ["stop"], "a successor on its way is stopped with the planner");
    pending.emit("state", "stopped"); // as a stopped socket says
    await tick(20_000);
    assert.equal(withPending.h.current, withPending.h.first, "and never adopted");
    assert.deepEqual(withPending.h.first.done, [], "the socket is left to the client");
    assert.deepEqual(withPending.p.metrics, { makeBeforeBreak: 0, quietBreak: 0, successorFailed: 0 });
  });

  test("a socket already replaced by the client when its moment comes is left alone", async () => {
    const { p, h } = planner({ free: 0 });
    p.setLifetime(60_000);
    const reconnected = new FakeSocket();
    reconnected.openedAt = undefined; // the client's own reconnect, not yet open
    h.current = reconnected;
    await tick(60_000);
    assert.deepEqual(h.first.done, [], "the replaced socket is not the planner's to cut");
    assert.deepEqual(reconnected.done, []);
    assert.equal(p.metrics.quietBreak, 0);
    p.stop();
  });

  test("a successor subscribed at once takes over at once", async () => {
    const { p, h } = planner();
    p.setLifetime(60_000);
    await tick(48_000);
    assert.equal(h.spawned.length, 1);
    assert.equal(h.current, h.spawned[0], "adopted without waiting for a state change");
    assert.deepEqual(h.first.done, ["retire 12000"]);
    p.stop();
  });

  test("a socket the client replaced or lost in the meantime is not the planner's: no successor, no cut", async () => {
    // Replaced (the client reconnected on its own) or closed (no longer open) when its moment comes.
    for (const change of ["replaced", "closed"] as const) {
      const { p, h } = planner();
      p.setLifetime(60_000);
      await tick(47_000);
      if (change === "replaced") {
        const reconnected = new FakeSocket();
        reconnected.authenticated = false;
        h.current = reconnected;
      } else h.first.openedAt = undefined;
      await tick(1000);
      assert.deepEqual(h.spawned, [], `${change}: no second socket`);
      assert.deepEqual(h.first.done, [], `${change}: nothing done to it`);
      p.stop();
    }

    // Replaced while its successor was connecting: the successor is stopped, not adopted.
    const racing = planner({ successor: connecting });
    racing.p.setLifetime(60_000);
    await tick(48_000);
    const reconnected = new FakeSocket();
    racing.h.current = reconnected;
    racing.h.spawned[0]!.emit("state", "subscribed");
    await settle();
    assert.equal(racing.h.current, reconnected, "the client's own socket stays");
    assert.deepEqual(racing.h.spawned[0]!.done, ["stop"]);
    assert.deepEqual(racing.p.metrics, { makeBeforeBreak: 0, quietBreak: 0, successorFailed: 0 });
    racing.p.stop();

    // Waiting for a quiet moment: replaced, closed or the planner stopped before it comes.
    for (const change of ["replaced", "closed", "stopped"] as const) {
      const { p, h } = planner({ free: 0 });
      h.first.busy = true;
      p.setLifetime(60_000);
      await tick(48_000);
      if (change === "replaced") h.current = new FakeSocket();
      else if (change === "closed") h.first.openedAt = undefined;
      else p.stop();
      h.first.busy = false;
      h.first.emit("idle");
      await tick(12_000);
      assert.deepEqual(h.first.done, [], `${change}: not cut`);
      assert.equal(p.metrics.quietBreak, 0, change);
      p.stop();
    }
  });
});
