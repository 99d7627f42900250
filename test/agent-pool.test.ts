// The pool with real demo-agent processes: warm spare, rotate, idle close,
// max_concurrent, close. Crashes and the circuit breaker: agent-crash.test.ts.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { poolFixture } from "./fixtures/agent-helpers.js";

const { pool, acquire, ask } = poolFixture();

describe("agent pool", () => {
  it("uses the warm spare: an acquire takes the ready process instead of spawning", async () => {
    const p = pool({ warmSpare: true });
    p.start();
    assert.equal(await p.spareReady(), true);
    const first = p.sparePid!;
    const a = await acquire(p, "a");
    assert.equal(a.proc.pid, first);
    assert.equal(await p.spareReady(), true, "a new spare is warmed after the first was taken");
    const second = p.sparePid!;
    assert.notEqual(second, first);
    const spawnsBefore = p.stats().spawns;
    const b = await acquire(p, "b");
    assert.equal(b.proc.pid, second, "the second acquire did not wait for a spawn");
    assert.equal((await b.prompt(ask("#final-only hi"))).stopReason, "end_turn");
    await p.spareReady();
    assert.equal(p.stats().spawns, spawnsBefore + 1, "only the refill of the spare spawned");
    assert.equal(p.stats().processes, 3);
  });

  it("rotate ends the scope's session; the next acquire starts a fresh one", async () => {
    const p = pool();
    const s = await acquire(p, "rot");
    assert.equal(await p.rotate("rot"), true);
    assert.equal(s.alive, false);
    const fresh = await acquire(p, "rot");
    // A rotate in the middle of a turn ends that turn as cancelled, not as a crash.
    const crashes: unknown[] = [];
    p.on("crash", (c) => crashes.push(c));
    const turn = fresh.prompt(ask("#hang"), { onUpdate: () => void p.rotate("rot") });
    const r = await turn;
    assert.equal(r.stopReason, "cancelled");
    assert.equal(crashes.length, 0);
    const third = await acquire(p, "rot");
    assert.notEqual(fresh.sessionId, s.sessionId);
    assert.notEqual(third.sessionId, fresh.sessionId);
    assert.equal(await p.rotate("nothing-here"), false);
  });

  it("an idle scope's process is closed after idle_close", async () => {
    const p = pool({ idleCloseMs: 300 });
    const s = await acquire(p, "idle");
    await s.prompt(ask("#final-only"));
    await s.proc.exited;
    assert.equal(p.session("idle"), undefined);
    assert.equal(p.stats().crashes, 0);
  });

  it("max_concurrent: a new scope closes the least recently used idle one", async () => {
    const p = pool({ maxConcurrent: 2 });
    const a = await acquire(p, "a");
    await acquire(p, "b");
    await acquire(p, "c");
    await a.proc.exited;
    assert.equal(p.session("a"), undefined);
    assert.equal(p.stats().scopes, 2);
  });

  it("max_concurrent: a session held for a turn is not closed to make room, even before its first prompt", async () => {
    const p = pool({ maxConcurrent: 2 });
    const at = { channel: { id: "general", name: "general" }, mcpEnv: {} };
    // a's turn has its session and still builds its prompt; b's turn just ended, later than a's acquire.
    const a = await p.acquire("a", { ...at, hold: true });
    const b = await acquire(p, "b");
    await b.prompt(ask("#final-only"));
    await acquire(p, "c");
    await b.proc.exited;
    assert.equal(a.alive, true, "the held session of a running turn was kept");
    assert.equal((await a.prompt(ask("#final-only hi"))).stopReason, "end_turn");
    // Once the turn lets go, its session is idle like any other.
    a.unhold();
    await acquire(p, "d");
    await a.proc.exited;
    assert.equal(p.session("a"), undefined);
  });

  it("close stops every process", async () => {
    const p = pool({ warmSpare: true });
    p.start();
    const s = await acquire(p, "z");
    await p.spareReady();
    const spare = p.sparePid!;
    await p.close();
    assert.equal(s.proc.alive, false);
    assert.throws(() => process.kill(spare, 0));
    await assert.rejects(acquire(p, "z"), /pool is closed/);
  });
});
