/**
 * src/base/retry.ts, the one retry loop: what it tries, how often, how long it pauses, and
 * what it gives when its limits stop it. Real timers with millisecond pauses.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { retry } from "../../src/base/retry.js";

const tiny = { baseMs: 5, capMs: 20, jitter: 0 };

/** An operation that fails `n` times (with errors naming the try), then gives `value`. */
function failing<T>(n: number, value: T) {
  const tries: number[] = [];
  const op = async (attempt: number) => {
    tries.push(attempt);
    if (tries.length <= n) throw new Error(`try ${attempt} failed`);
    return value;
  };
  return { op, tries };
}

test("retry: a failure that passes is tried again until the operation succeeds; each retry is told with its pause", async () => {
  const { op, tries } = failing(3, "done");
  const told: [number, string, number][] = [];
  const out = await retry(op, { backoff: tiny, onRetry: (a, err, d) => told.push([a, (err as Error).message, d]) });
  assert.equal(out, "done");
  assert.deepEqual(tries, [1, 2, 3, 4]);
  assert.deepEqual(told, [
    [1, "try 1 failed", 5],
    [2, "try 2 failed", 10],
    [3, "try 3 failed", 20],
  ]);
});

test("retry: `attempts` counts every try, the first one included; then the last error is thrown as it was", async () => {
  const { op, tries } = failing(10, "never");
  await assert.rejects(retry(op, { backoff: tiny, attempts: 3 }), /try 3 failed/);
  assert.deepEqual(tries, [1, 2, 3]);
});

test("retry: an error `retryable` refuses is thrown at once, without a pause or an onRetry", async () => {
  const { op, tries } = failing(10, "never");
  let told = 0;
  await assert.rejects(retry(op, { backoff: tiny, retryable: (_err, attempt) => attempt < 2, onRetry: () => told++ }), /try 2 failed/);
  assert.deepEqual(tries, [1, 2]);
  assert.equal(told, 1, "only the first failure was retried");
});

test("retry: no retry whose pause would end past the deadline; the failure comes at once instead", async () => {
  const { op, tries } = failing(10, "never");
  const started = Date.now();
  // A 10 s pause would end past the 5 s deadline: the first failure is the answer, at once.
  await assert.rejects(retry(op, { backoff: { baseMs: 10_000, factor: 1, jitter: 0 }, deadline: started + 5_000 }), /try 1 failed/);
  assert.deepEqual(tries, [1]);
  assert.ok(Date.now() - started < 5_000, `gave up after ${Date.now() - started} ms, without the pause that could not help`);
});

test("retry: aborting the signal ends the pause under way and gives the last failure", async () => {
  const { op, tries } = failing(10, "never");
  const stop = new AbortController();
  const started = Date.now();
  const p = retry(op, { backoff: { baseMs: 60_000, jitter: 0 }, signal: stop.signal, onRetry: () => stop.abort() });
  await assert.rejects(p, /try 1 failed/);
  assert.deepEqual(tries, [1]);
  assert.ok(Date.now() - started < 5_000, "the minute-long pause was cut short");
});

test("retry: with the signal aborted already, one try is made and nothing is retried", async () => {
  const { op, tries } = failing(1, "ok");
  await assert.rejects(retry(op, { backoff: tiny, signal: AbortSignal.abort() }), /try 1 failed/);
  assert.deepEqual(tries, [1]);
});

test("retry: `again` retries a result that reports a failure, and returns the last one when the tries run out", async () => {
  const outcomes = ["timeout", "timeout", "accepted"];
  let i = 0;
  const op = async () => outcomes[i++]!;
  assert.equal(await retry(op, { backoff: tiny, again: (s) => s !== "accepted" }), "accepted");
  i = 0;
  assert.equal(await retry(op, { backoff: tiny, attempts: 2, again: (s) => s !== "accepted" }), "timeout");
  assert.equal(i, 2);
});

test("retry: `delayMs` replaces the backoff's pause (0 goes again at once); undefined keeps the backoff's", async () => {
  const { op } = failing(3, "done");
  const pauses: number[] = [];
  await retry(op, {
    backoff: { baseMs: 30, factor: 1, jitter: 0 },
    delayMs: (_err, attempt) => (attempt === 1 ? 0 : attempt === 2 ? 7 : undefined),
    onRetry: (_a, _e, d) => pauses.push(d),
  });
  assert.deepEqual(pauses, [0, 7, 30]);
});
