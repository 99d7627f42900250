// The event emitters in src/ declare what they emit, so tsc rejects a misspelt event name or a
// listener of the wrong shape. The `@ts-expect-error` lines below are the test: `npm test`
// (its `tsc -p tsconfig.test.json` step) fails if any of them compiles (an emitter lost its event map). The runtime cases
// check that the declared payloads are the ones actually emitted.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { generateSecretKey, type Event } from "nostr-tools/pure";
import { CrashBreaker, type CircuitChange } from "../../src/agent/circuit.js";
import type { AgentPool, AgentProcess } from "../../src/agent/index.js";
import { RelayConnection, type ConnectionState } from "../../src/relay/index.js";
import type { Scheduler } from "../../src/queue/index.js";

/** Never called: compiled only, by `npm test`'s type check of the tests. */
function typeChecks(conn: RelayConnection, pool: AgentPool, proc: AgentProcess, breaker: CrashBreaker, queue: Scheduler): void {
  // Listeners are inferred from the event map and may use the payload's fields.
  conn.on("event", (subId, ev) => void [subId.length, ev.kind]);
  conn.on("state", (state, prev) => void [state satisfies ConnectionState, prev satisfies ConnectionState]);
  conn.once("sub-closed", (subId, reason) => void [subId.length, reason.length]);
  pool.on("crash", (c) => void [c.pid, c.scope?.length, c.code, c.signal, c.stderrTail.length]);
  pool.on("exit", (e) => void [e.pid, e.scope.length, e.expected]);
  pool.on("rotate", (r) => void r.reason.length);
  proc.once("exit", (e) => void [e.code, e.signal, e.expected]);
  breaker.on("change", (c) => void [c.state satisfies "open" | "closed", c.until, c.crashes]);
  queue.on("ready", () => void queue.next()?.rotated);
  queue.on("failed", (f) => void [f.turnId, f.scope.channel, f.events.length, f.error.length, f.attempts, f.publishedReplyIds.length]);
  queue.on("refused", (r) => void [r.scope.length, r.channel.length, r.reason satisfies "scope-cap" | "queue-full", r.events.length]);
  queue.on("lost", (turnIds) => void turnIds.map((id) => id + 1));

  // @ts-expect-error misspelt event name
  conn.on("evnet", () => {});
  // @ts-expect-error state is a ConnectionState, not a number
  conn.on("state", (s: number) => void s);
  // @ts-expect-error `event` gives two arguments, not three
  conn.on("event", (subId: string, ev: Event, extra: string) => void [subId, ev, extra]);
  // @ts-expect-error `eose` needs the subscription id
  conn.emit("eose");
  // @ts-expect-error the reason is a string
  conn.emit("auth-failed", 42);
  // @ts-expect-error misspelt event name
  pool.once("circiut", () => {});
  // @ts-expect-error a crash's scope is a string or undefined
  pool.on("crash", (c: { scope: number }) => void c);
  // @ts-expect-error `rotate` gives { scope, reason }, not a string
  pool.off("rotate", (r: string) => void r);
  // @ts-expect-error `exit` gives ExitInfo, not an exit code
  proc.on("exit", (code: number) => void code);
  // @ts-expect-error ExitInfo needs signal and expected too
  proc.emit("exit", { code: 0 });
  // @ts-expect-error the breaker has no "half-open" state
  breaker.on("change", (c: { state: "half-open" }) => void c);
  // @ts-expect-error misspelt event name
  breaker.emit("chnage", { state: "open", until: 1, crashes: 3 });
  // @ts-expect-error the scheduler has no `wake` event (it is `ready`)
  queue.on("wake", () => {});
  // @ts-expect-error `lost` gives turn ids, not scope keys
  queue.on("lost", (keys: string[]) => void keys);
  // @ts-expect-error `failed` needs the FinalFailure
  queue.emit("failed");
  // @ts-expect-error `ready` carries nothing: the batches are taken with next()
  queue.emit("ready", 1);
}
void typeChecks;

describe("typed event emitters", () => {
  it("the crash breaker's `change` events carry the declared CircuitChange: open with until and crashes, then closed", async () => {
    const breaker = new CrashBreaker({ threshold: 2, openMs: 50, backoffBaseMs: 1 });
    const changes: CircuitChange[] = [];
    const closed = new Promise<void>((resolve) =>
      breaker.on("change", (c) => {
        changes.push(c);
        if (c.state === "closed") resolve();
      }),
    );
    // The breaker's timer is unref'd; this one keeps the test process up meanwhile (and bounds it).
    let guard: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      guard = setTimeout(() => reject(new Error("the breaker did not close within 10 s")), 10_000);
    });
    try {
      breaker.record();
      breaker.record();
      await Promise.race([closed, timedOut]);
      assert.equal(changes.length, 2);
      assert.equal(changes[0]!.state, "open");
      assert.equal(typeof changes[0]!.until, "number");
      assert.equal(changes[0]!.crashes, 2);
      assert.deepEqual(changes[1], { state: "closed", until: undefined, crashes: 0 });
    } finally {
      clearTimeout(guard);
      breaker.dispose();
    }
  });

  it("a relay connection's `state` event gives the new state and the previous one", () => {
    const conn = new RelayConnection({ url: "ws://127.0.0.1:9", secretKey: generateSecretKey() });
    const seen: Array<[ConnectionState, ConnectionState]> = [];
    conn.on("state", (state, prev) => seen.push([state, prev]));
    conn.stop();
    assert.deepEqual(seen, [["stopped", "idle"]]);
  });
});
