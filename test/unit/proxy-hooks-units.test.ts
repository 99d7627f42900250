/**
 * src/proxy/hooks.ts in process: the merge of the gates' answers and the fan-out's rules
 * (every gate once, all at once, one deadline, on_error, restart after two misses, the log
 * line), with small in-process stand-ins for the downstream servers. proxy-hooks.test.ts
 * drives the same code through the built proxy and real gate servers.
 */
import { describe, test } from "node:test";
import type { TestContext } from "node:test";
import assert from "node:assert/strict";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { MAX_HOOK_TEXT_BYTES, mergeHookTexts, runHookFanout } from "../../src/proxy/hooks.js";
import type { Downstream } from "../../src/proxy/downstream.js";
import { captureLogger } from "../../kit/queue-helpers.js";

describe("mergeHookTexts", () => {
  test("objections in the given order as `[server] text`, trimmed, blank-line separated; allowing servers left out", () => {
    assert.equal(
      mergeHookTexts([
        { name: "ci", text: "  CI is red \n" },
        { name: "lint", text: "" },
        { name: "blank", text: " \n\t" },
        { name: "docs", text: "README lacks the flag" },
      ]),
      "[ci] CI is red\n\n[docs] README lacks the flag",
    );
    assert.equal(mergeHookTexts([]), "");
    assert.equal(mergeHookTexts([{ name: "a", text: "" }]), "");
  });

  test("within the budget nothing is cut, to the byte", () => {
    const a = "[a] " + "x".repeat(40);
    const b = "[b] " + "y".repeat(54);
    const exact = Buffer.byteLength(a) + 2 + Buffer.byteLength(b);
    assert.equal(
      mergeHookTexts(
        [
          { name: "a", text: "x".repeat(40) },
          { name: "b", text: "y".repeat(54) },
        ],
        exact,
      ),
      `${a}\n\n${b}`,
    );
  });

  test("over the budget: short answers keep everything, long ones share the rest equally, cut with a marker", () => {
    const max = 100;
    const merged = mergeHookTexts(
      [
        { name: "s", text: "short" },
        { name: "l1", text: "a".repeat(200) },
        { name: "l2", text: "b".repeat(300) },
      ],
      max,
    );
    const [s, l1, l2] = merged.split("\n\n");
    assert.equal(s, "[s] short", "the short one whole");
    // (100 - 2 separators of 2 bytes - 9 for the short one) / 2 each.
    assert.equal(Buffer.byteLength(l1!), 43);
    assert.equal(Buffer.byteLength(l2!), 44);
    assert.ok(l1!.startsWith("[l1] aaa") && l1!.endsWith("…"));
    assert.ok(l2!.startsWith("[l2] bbb") && l2!.endsWith("…"));
    assert.ok(Buffer.byteLength(merged) <= max);
  });

  test("a cut never splits a character", () => {
    const merged = mergeHookTexts(
      [
        { name: "a", text: "é".repeat(100) },
        { name: "b", text: "日".repeat(100) },
      ],
      61,
    );
    assert.ok(!merged.includes("\uFFFD"), merged);
    assert.ok(Buffer.byteLength(merged) <= 61);
    for (const part of merged.split("\n\n")) assert.ok(part.endsWith("…"));
  });

  test("the default budget is buzz-agent's 16 KiB", () => {
    assert.equal(MAX_HOOK_TEXT_BYTES, 16 * 1024);
    const merged = mergeHookTexts([
      { name: "a", text: "x".repeat(20_000) },
      { name: "b", text: "y".repeat(20_000) },
    ]);
    assert.ok(Buffer.byteLength(merged) <= MAX_HOOK_TEXT_BYTES);
    assert.ok(Buffer.byteLength(merged) > MAX_HOOK_TEXT_BYTES - 10, "the budget is used, not wasted");
  });

  test("a short answer keeps everything wherever it stands in the config order; the long ones share the rest", () => {
    const short = { name: "s", text: "short" };
    const l1 = { name: "l1", text: "a".repeat(200) };
    const l2 = { name: "l2", text: "b".repeat(300) };
    // (100 - 2 separators of 2 bytes - 9 for the short one) / 2: 43 and 44 bytes, marker included.
    const cut1 = `[l1] ${"a".repeat(35)}…`;
    const cut2 = `[l2] ${"b".repeat(36)}…`;
    assert.equal(mergeHookTexts([l1, short, l2], 100), `${cut1}\n\n[s] short\n\n${cut2}`);
    assert.equal(mergeHookTexts([l1, l2, short], 100), `${cut1}\n\n${cut2}\n\n[s] short`);
    assert.equal(mergeHookTexts([l2, l1, short], 100), `${cut2}\n\n${cut1}\n\n[s] short`);
  });

  test("a cut ends on the last whole character before the budget, then the marker", () => {
    // "[a] " is 4 bytes, each é 2: 10 bytes leave 7 before the 3-byte marker, one é and a half.
    assert.equal(mergeHookTexts([{ name: "a", text: "é".repeat(100) }], 10), "[a] é…");
    assert.equal(mergeHookTexts([{ name: "a", text: "é".repeat(100) }], 11), "[a] éé…", "a whole character that fits is kept");
  });

  test("a cut keeps the answer's own replacement characters (U+FFFD) up to the cut", () => {
    // "[a] ok " is 7 bytes, each U+FFFD and 日 3: 18 bytes leave 15 before the marker, the cut in the first 日.
    assert.equal(mergeHookTexts([{ name: "a", text: `ok \uFFFD\uFFFD${"日".repeat(20)}` }], 18), "[a] ok \uFFFD\uFFFD…");
    assert.equal(mergeHookTexts([{ name: "a", text: `a\uFFFDb ${"x".repeat(40)}` }], 20), "[a] a\uFFFDb xxxxxxx…", "one in the middle too");
  });
});

/** A downstream server as the fan-out uses it: its answer is `answer`, called with the hook's args and a signal. */
class FakeServer {
  state: "starting" | "ready" | "down" | "stopped" = "ready";
  /** Why it is down, as Downstream keeps it. */
  lastError?: string;
  /** It serves both hooks: the fan-out skips a server that lists no tool of the hook's name. */
  tools = [{ name: "_Stop" }, { name: "_PostCompact" }];
  hookMisses = 0;
  calls: Array<{ hook: string; args: Record<string, unknown>; signal?: AbortSignal }> = [];
  restarts: string[] = [];
  private ready!: () => void;
  readonly whenReadyPromise = new Promise<void>((r) => (this.ready = r));

  constructor(
    readonly name: string,
    readonly answer: (signal?: AbortSignal) => Promise<CallToolResult>,
    readonly cfg: { on_error: "allow" | "object" } = { on_error: "allow" },
  ) {}

  whenReady(): Promise<void> {
    return this.whenReadyPromise;
  }

  markReady(): void {
    this.state = "ready";
    this.ready();
  }

  call(hook: string, args: Record<string, unknown>, o: { signal?: AbortSignal }): Promise<CallToolResult> {
    this.calls.push({ hook, args, signal: o.signal });
    return this.answer(o.signal);
  }

  async restart(reason: string): Promise<void> {
    this.restarts.push(reason);
  }
}

const says =
  (text: string, extra: Partial<CallToolResult> = {}) =>
  async (): Promise<CallToolResult> => ({
    content: [{ type: "text", text }],
    ...extra,
  });
const never = () => new Promise<CallToolResult>(() => {});
const fanout = (hook: string, servers: FakeServer[], deadlineMs = 200, args?: Record<string, unknown>) => {
  const { logger, lines } = captureLogger("info");
  return runHookFanout(hook, servers as unknown as Downstream[], { deadlineMs, logger, args }).then((r) => ({ r, lines }));
};

describe("runHookFanout", () => {
  test("every server is asked once with the hook's args; the merged answer in config order; one log line", async () => {
    const a = new FakeServer("ci", says("CI is red"));
    const b = new FakeServer("lint", says(""));
    const c = new FakeServer("docs", says("docs missing"));
    const { r, lines } = await fanout("_Stop", [a, b, c], 1000, { reason: "end" });
    for (const s of [a, b, c])
      assert.deepEqual(
        s.calls.map((x) => [x.hook, x.args]),
        [["_Stop", { reason: "end" }]],
      );
    assert.equal(r.text, "[ci] CI is red\n\n[docs] docs missing");
    assert.equal(r.verdict, "object");
    assert.deepEqual(
      r.servers.map((s) => [s.name, s.verdict, s.timed_out, s.text, s.error]),
      [
        ["ci", "object", false, "CI is red", undefined],
        ["lint", "allow", false, "", undefined],
        ["docs", "object", false, "docs missing", undefined],
      ],
    );
    assert.equal(typeof r.ms, "number");
    assert.equal(lines.length, 1);
    const line = lines[0]!;
    assert.equal(line.evt, "hook");
    assert.equal(line.hook, "_Stop");
    assert.equal(line.verdict, "object");
    assert.equal(line.ms, r.ms);
    assert.deepEqual(
      line.servers.map((s: Record<string, unknown>) => Object.keys(s).sort()),
      [
        ["ms", "name", "timed_out", "verdict"],
        ["ms", "name", "timed_out", "verdict"],
        ["ms", "name", "timed_out", "verdict"],
      ],
      "no error key when there was no error",
    );
    assert.equal(a.calls[0]!.signal?.aborted, false);
  });

  test("no args: the hook is called with {}", async () => {
    const a = new FakeServer("a", says(""));
    const { r } = await fanout("_PostCompact", [a]);
    assert.deepEqual(a.calls[0]!.args, {});
    assert.deepEqual([r.text, r.verdict], ["", "allow"]);
  });

  test("all at once: a server that answers only after the others were asked still makes the deadline", async () => {
    const order: string[] = [];
    let release!: () => void;
    const others = new Promise<void>((r) => (release = r));
    const first = new FakeServer("first", async () => {
      order.push("first asked");
      await others;
      return { content: [{ type: "text", text: "saw the others" }] };
    });
    const second = new FakeServer("second", async () => {
      order.push("second asked");
      release();
      return { content: [{ type: "text", text: "" }] };
    });
    const { r } = await fanout("_Stop", [first, second], 1000);
    assert.deepEqual(order, ["first asked", "second asked"]);
    assert.equal(r.text, "[first] saw the others");
    assert.ok(r.servers.every((s) => !s.timed_out));
  });

  test("a server past the one deadline: timed out, no objection (on_error allow), its call aborted, a miss counted", async () => {
    const hung = new FakeServer("hung", never);
    const ok = new FakeServer("ok", says("ok objects"));
    const { r, lines } = await fanout("_Stop", [hung, ok], 50);
    assert.equal(r.text, "[ok] ok objects");
    const h = r.servers[0]!;
    assert.deepEqual([h.name, h.verdict, h.timed_out, h.text, h.error], ["hung", "allow", true, "", "no answer within 50 ms"]);
    assert.equal(hung.calls[0]!.signal?.aborted, true, "the late call is cancelled");
    assert.equal(hung.hookMisses, 1);
    assert.deepEqual(hung.restarts, []);
    assert.equal(lines[0]!.servers[0].error, "no answer within 50 ms");
  });

  test("two hung servers share the one deadline: the answer does not wait for them one after the other", async () => {
    const hung1 = new FakeServer("hung1", never);
    const hung2 = new FakeServer("hung2", never);
    let asked = 0;
    // Answers only when both hung servers were already asked.
    const late = new FakeServer("late", async () => {
      asked = hung1.calls.length + hung2.calls.length;
      return { content: [{ type: "text", text: `asked ${asked}` }] };
    });
    const { r } = await fanout("_Stop", [hung1, hung2, late], 100);
    assert.equal(r.text, "[late] asked 2");
    assert.deepEqual(
      r.servers.map((s) => [s.name, s.timed_out]),
      [
        ["hung1", true],
        ["hung2", true],
        ["late", false],
      ],
    );
  });

  test("on_error object: a miss or an error is an objection that says why", async () => {
    const hung = new FakeServer("approval", never, { on_error: "object" });
    const { r } = await fanout("_Stop", [hung], 30);
    assert.equal(r.verdict, "object");
    assert.equal(r.servers[0]!.verdict, "object");
    assert.equal(r.text, "[approval] _Stop could not be checked (no answer within 30 ms); this server is set to object on errors");
  });

  test("the second miss in a row restarts the server; an answer in between resets the count", async () => {
    let hang = true;
    const s = new FakeServer("flaky", () => (hang ? never() : says("")()));
    await fanout("_Stop", [s], 20);
    assert.equal(s.hookMisses, 1);
    hang = false;
    await fanout("_Stop", [s], 20);
    assert.equal(s.hookMisses, 0, "an answer resets the count");
    hang = true;
    await fanout("_Stop", [s], 20);
    assert.deepEqual(s.restarts, []);
    await fanout("_Stop", [s], 20);
    assert.deepEqual(s.restarts, ["missed the _Stop deadline 2 times in a row"]);
    assert.equal(s.hookMisses, 0, "counted afresh after the restart");
  });

  test("a thrown error and an isError answer are errors, not objections (on_error allow); the text says which", async () => {
    const thrower = new FakeServer("thrower", async () => {
      throw new Error("connection closed");
    });
    const flagged = new FakeServer("flagged", says("gate check failed", { isError: true }));
    const bare = new FakeServer("bare", says("", { isError: true }));
    const strict = new FakeServer("strict", says("broken", { isError: true }), { on_error: "object" });
    const { r, lines } = await fanout("_Stop", [thrower, flagged, bare, strict]);
    assert.deepEqual(
      r.servers.map((s) => [s.name, s.verdict, s.timed_out, s.error]),
      [
        ["thrower", "allow", false, "connection closed"],
        ["flagged", "allow", false, "gate check failed"],
        ["bare", "allow", false, "isError without text"],
        ["strict", "object", false, "broken"],
      ],
    );
    assert.equal(r.text, "[strict] _Stop could not be checked (broken); this server is set to object on errors");
    assert.equal(thrower.hookMisses, 0, "an error is not a missed deadline");
    assert.equal(lines[0]!.servers[0].error, "connection closed");
  });

  test("only text content counts, joined by lines and trimmed", async () => {
    const s = new FakeServer("mixed", async () => ({
      content: [
        { type: "text", text: " first " },
        { type: "image", data: "AAAA", mimeType: "image/png" },
        { type: "text", text: "second\n" },
      ],
    }));
    const none = new FakeServer("none", async () => ({ content: [{ type: "image", data: "AAAA", mimeType: "image/png" }] }));
    const { r } = await fanout("_Stop", [s, none]);
    assert.equal(r.servers[0]!.text, "first \nsecond");
    assert.equal(r.servers[1]!.verdict, "allow");
    assert.equal(r.text, "[mixed] first \nsecond");
  });

  test("a server still starting is asked once it is ready, within the deadline", async () => {
    const s = new FakeServer("slowstart", says("objects"));
    s.state = "starting";
    const pending = fanout("_Stop", [s], 1000);
    await new Promise((r) => setImmediate(r));
    assert.equal(s.calls.length, 0, "not asked before it is ready");
    s.markReady();
    const { r } = await pending;
    assert.equal(r.text, "[slowstart] objects");
  });

  test("a gate that is down or stopped is not asked: it is down (not timed out), says why, and counts as its on_error", async () => {
    const approval = new FakeServer("approval", says("would allow"), { on_error: "object" });
    approval.state = "down";
    approval.lastError = "spawn approval-gate ENOENT";
    const ci = new FakeServer("ci", says("would object"));
    ci.state = "stopped";
    const { r, lines } = await fanout("_Stop", [approval, ci]);
    assert.deepEqual([approval.calls.length, ci.calls.length], [0, 0], "neither is asked");
    assert.deepEqual(
      r.servers.map((s) => [s.name, s.verdict, s.timed_out, s.down, s.error]),
      [
        ["approval", "object", false, true, "not running: spawn approval-gate ENOENT"],
        ["ci", "allow", false, true, "not running"],
      ],
    );
    assert.equal(
      r.text,
      "[approval] _Stop could not be checked (not running: spawn approval-gate ENOENT); this server is set to object on errors",
      "a human approval that is down never approves",
    );
    assert.deepEqual([approval.hookMisses, approval.restarts], [0, []], "being down is no missed deadline");
    assert.deepEqual(
      lines[0]!.servers.map((s: Record<string, unknown>) => [s.name, s.down, s.error]),
      [
        ["approval", true, "not running: spawn approval-gate ENOENT"],
        ["ci", true, "not running"],
      ],
    );
  });

  test("a down gate's reason is its last error cut to 300 characters", async () => {
    const s = new FakeServer("gate", says(""));
    s.state = "down";
    s.lastError = `${"e".repeat(300)}TAIL`;
    const { r } = await fanout("_Stop", [s]);
    assert.equal(r.servers[0]!.error, `not running: ${"e".repeat(300)}`);
  });

  test("a timeout or an error of a running gate is not `down`: the result and the log line carry no down flag", async () => {
    const hung = new FakeServer("hung", never);
    const thrower = new FakeServer("thrower", async () => {
      throw new Error("boom");
    });
    const { r, lines } = await fanout("_Stop", [hung, thrower], 30);
    assert.deepEqual(
      r.servers.map((s) => ["down" in s, s.error]),
      [
        [false, "no answer within 30 ms"],
        [false, "boom"],
      ],
    );
    assert.deepEqual(
      lines[0]!.servers.map((s: Record<string, unknown>) => Object.keys(s).sort()),
      [
        ["error", "ms", "name", "timed_out", "verdict"],
        ["error", "ms", "name", "timed_out", "verdict"],
      ],
    );
  });

  test("a gate still starting when the deadline comes is down, not a missed deadline, and gets no live request", async (t: TestContext) => {
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const s = new FakeServer("slowstart", says("objects"), { on_error: "object" });
    s.state = "starting";
    s.lastError = "restarting after a crash";
    const pending = fanout("_Stop", [s], 100);
    t.mock.timers.tick(100);
    const { r } = await pending;
    assert.deepEqual(
      [r.servers[0]!.timed_out, r.servers[0]!.down, r.servers[0]!.error],
      [false, true, "not running: restarting after a crash"],
    );
    assert.equal(r.verdict, "object");
    assert.equal(s.hookMisses, 0);
    s.markReady();
    await new Promise((resolve) => setImmediate(resolve));
    // Coming up after the deadline, any request it still gets is already cancelled (the MCP client then sends none).
    assert.ok(
      s.calls.every((c) => c.signal?.aborted === true),
      "no live request after the deadline",
    );
  });

  test("a server without the hook is not asked and does not object; one that serves only this hook is asked", async () => {
    const search = new FakeServer("search", says("would object"));
    search.tools = [{ name: "search" }, { name: "_PostCompact" }];
    const bare = new FakeServer("bare", says("would object"));
    bare.tools = [];
    const gate = new FakeServer("gate", says("CI is red"));
    gate.tools = [{ name: "_Stop" }];
    const { r } = await fanout("_Stop", [search, bare, gate]);
    assert.deepEqual([search.calls.length, bare.calls.length, gate.calls.length], [0, 0, 1]);
    assert.deepEqual(
      r.servers.map((s) => [s.name, s.verdict, s.text, s.error]),
      [
        ["search", "allow", "", undefined],
        ["bare", "allow", "", undefined],
        ["gate", "object", "CI is red", undefined],
      ],
    );
    assert.equal(r.text, "[gate] CI is red");
  });

  test("a gate that fails with no error object at all is an error result; the fan-out still answers", async () => {
    const odd = new FakeServer("odd", () => Promise.reject(undefined));
    const ok = new FakeServer("ok", says("objects"));
    const { r } = await fanout("_Stop", [odd, ok]);
    assert.deepEqual(
      r.servers.map((s) => [s.name, s.verdict, s.error]),
      [
        ["odd", "allow", "undefined"],
        ["ok", "object", undefined],
      ],
    );
    assert.equal(r.text, "[ok] objects");
  });

  test("ms: each gate's own time to answer (or the deadline it missed), and the whole fan-out's wait", async (t: TestContext) => {
    t.mock.timers.enable({ apis: ["setTimeout", "Date"], now: 1_700_000_000_000 });
    const fast = new FakeServer(
      "fast",
      () => new Promise((resolve) => setTimeout(() => resolve({ content: [{ type: "text", text: "no" }] }), 30)),
    );
    const hung = new FakeServer("hung", never);
    const pending = fanout("_Stop", [fast, hung], 100);
    t.mock.timers.tick(30);
    // Let the fast answer settle at 30 ms before the clock moves on.
    await new Promise((resolve) => setImmediate(resolve));
    t.mock.timers.tick(70);
    const { r, lines } = await pending;
    assert.deepEqual(
      r.servers.map((s) => [s.name, s.ms, s.timed_out]),
      [
        ["fast", 30, false],
        ["hung", 100, true],
      ],
    );
    assert.equal(r.ms, 100);
    assert.deepEqual(
      lines[0]!.servers.map((s: Record<string, unknown>) => s.ms),
      [30, 100],
    );
    assert.equal(lines[0]!.ms, 100);
  });

  test("nobody to ask: an empty answer at once", async () => {
    const { r } = await fanout("_Stop", []);
    assert.deepEqual([r.text, r.verdict, r.servers], ["", "allow", []]);
  });
});
