// Crashes with real demo-agent processes: a crash mid-turn → AgentCrashedError →
// respawn; the circuit breaker opens after 3 crashes and closes again.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { AgentCrashedError, AgentStartError, CircuitOpenError } from "../src/agent/index.js";
import { CLI } from "../kit/world.js";
import { poolFixture } from "./fixtures/agent-helpers.js";

const { pool, acquire, ask, tmp } = poolFixture();

describe("agent crashes", () => {
  it("a crash mid-turn fails the turn with AgentCrashedError; the next turn gets a new process", async () => {
    const p = pool({ circuit: { backoffBaseMs: 50 } });
    const crashes: Array<{ scope?: string; code: number | null }> = [];
    p.on("crash", (c) => crashes.push(c));
    const s = await acquire(p, "crashy");
    await assert.rejects(s.prompt(ask("#crash")), (e: unknown) => {
      assert.ok(e instanceof AgentCrashedError, String(e));
      assert.equal(e.exitCode, 1);
      assert.match(e.message, /exited with code 1 during the turn/);
      return true;
    });
    assert.equal(crashes.length, 1);
    assert.equal(crashes[0]!.scope, "crashy");
    const again = await acquire(p, "crashy");
    assert.notEqual(again.proc.pid, s.proc.pid);
    const r = await again.prompt(ask("#final-only are you back?"));
    assert.match(r.finalText, /Asked: #final-only are you back\?/);
    assert.equal(p.stats().crashes, 1);
    assert.equal(p.circuit.state, "closed");
  });

  it("3 crashes within the window open the circuit breaker; calls fail fast until it closes again", async () => {
    const p = pool({ circuit: { backoffBaseMs: 20, openMs: 1_500 } });
    const states: string[] = [];
    p.on("circuit", (c: { state: string }) => states.push(c.state));
    for (let i = 0; i < 3; i++) {
      const s = await acquire(p, `c${i}`);
      await assert.rejects(s.prompt(ask("#crash")), AgentCrashedError);
    }
    assert.equal(p.circuit.state, "open");
    assert.equal(p.stats().circuit, "open");
    await assert.rejects(acquire(p, "next"), (e: unknown) => e instanceof CircuitOpenError && /crashed 3 times/.test(e.message));
    await new Promise<void>((r) => p.once("circuit", () => r()));
    assert.deepEqual(states, ["open", "closed"]);
    const s = await acquire(p, "next");
    assert.equal((await s.prompt(ask("#final-only back"))).stopReason, "end_turn");
  });

  it("an agent that started before and then fails to start three times in a row: the refusal says so, with the last failure, not that it crashed", async () => {
    const broken = join(tmp.dir, "broken-now");
    const p = pool({
      command: "sh",
      // Starts the demo agent until the file exists, then exits at once the way a lost credential would.
      args: ["-c", `if [ -e ${broken} ]; then echo "no credentials" >&2; exit 3; fi; exec "${process.execPath}" "${CLI}" demo-agent`],
      circuit: { backoffBaseMs: 10 },
    });
    const s = await acquire(p, "before");
    assert.equal((await s.prompt(ask("#final-only hello"))).stopReason, "end_turn");
    writeFileSync(broken, "");
    for (let i = 0; i < 3; i++) await assert.rejects(acquire(p, `after${i}`), AgentStartError);
    await assert.rejects(acquire(p, "next"), (e: unknown) => {
      assert.ok(e instanceof CircuitOpenError, String(e));
      assert.match(e.message, /failed to start 3 times in a row \(the last: exited at once \(code 3\)[^)]*\); not trying again until/);
      assert.doesNotMatch(e.message, /crashed/);
      return true;
    });
  });

  it("a command that cannot start counts towards the breaker too", async () => {
    const p = pool({ command: "/nonexistent/agent", args: [], circuit: { backoffBaseMs: 10 } });
    for (let i = 0; i < 3; i++) await assert.rejects(acquire(p, "x"), /command not found/);
    await assert.rejects(acquire(p, "x"), CircuitOpenError);
  });
});
