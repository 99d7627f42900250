/**
 * Merged hooks through the built proxy with real gate servers: attribution in config
 * order, exactly-once fan-out, the parallel fan-out under one deadline, on_error, and
 * restart after two misses; over stdio and over the daemon's HTTP serving of the same
 * aggregation. Judged by what the gates answered and the proxy's `hook` log line; how fast
 * the merged answer comes is bench/hooks.ts's figure, not a test's.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TRANSPORTS, gate, startProxy, textOf, type RunningProxy } from "./fixtures/proxy-harness.js";
import { waitFor } from "../kit/wait.js";

const scratch = mkdtempSync(join(tmpdir(), "proxy-hooks-"));
after(() => rmSync(scratch, { recursive: true, force: true }));
const counter = (name: string) => join(scratch, name);
const lines = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").trim().split("\n").filter(Boolean) : []);

for (const transport of TRANSPORTS) {
  describe(`merged _Stop and _PostCompact across three gates (${transport})`, () => {
    let p: RunningProxy;
    before(async () => {
      p = await startProxy(
        {
          servers: {
            dev: gate({ GATE_TOOLS: "shell", GATE_NO_STOP: "1" }, { prefix: false }),
            ci: gate({
              GATE_STOP_TEXT: "CI is red: run #42 failed.",
              GATE_POSTCOMPACT_TEXT: "Reminder from ci-gate",
              GATE_COUNTER_FILE: counter("ci"),
            }),
            lint: gate({ GATE_STOP_TEXT: "", GATE_COUNTER_FILE: counter("lint") }),
            approval: gate({
              GATE_STOP_TEXT: "  Approval requested in channel.\n",
              GATE_POSTCOMPACT_TEXT: "Note from approval-gate",
              GATE_COUNTER_FILE: counter("approval"),
            }),
          },
          hook_deadline: "2s",
        },
        {},
        { transport },
      );
    });
    after(() => p?.close());

    test("lists exactly one _Stop and one _PostCompact, hiding each gate's own", async () => {
      const names = (await p.client.listTools()).tools.map((t) => t.name);
      assert.equal(names.filter((n) => n === "_Stop").length, 1);
      assert.equal(names.filter((n) => n === "_PostCompact").length, 1);
      assert.ok(!names.some((n) => n.includes("__") || /_(_Stop|_PostCompact)$/.test(n)));
    });

    test("_Stop merges the two objections in config order, attributed, never isError", async () => {
      const r = await p.call("_Stop");
      assert.ok(!r.isError);
      assert.equal(textOf(r), "[ci] CI is red: run #42 failed.\n\n[approval] Approval requested in channel.");
    });

    test("each gate is called exactly once per fan-out", async () => {
      const before = { ci: lines(counter("ci")).length, lint: lines(counter("lint")).length, approval: lines(counter("approval")).length };
      await p.call("_Stop");
      await p.call("_Stop");
      assert.equal(lines(counter("ci")).length - before.ci, 2);
      assert.equal(lines(counter("lint")).length - before.lint, 2);
      assert.equal(lines(counter("approval")).length - before.approval, 2);
    });

    test("_PostCompact reaches only the servers that have it", async () => {
      const lintBefore = lines(counter("lint")).length;
      const r = await p.call("_PostCompact");
      assert.equal(textOf(r), "[ci] Reminder from ci-gate\n\n[approval] Note from approval-gate");
      assert.equal(lines(counter("lint")).length, lintBefore);
    });

    test("one JSON log line per fan-out with per-server verdicts", async () => {
      await p.call("_Stop");
      const hooks = p.logs().filter((l) => l.evt === "hook" && l.hook === "_Stop");
      const last = hooks.at(-1) as { verdict: string; ms: number; servers: { name: string; verdict: string; timed_out: boolean }[] };
      assert.equal(last.verdict, "object");
      assert.equal(typeof last.ms, "number");
      assert.deepEqual(
        last.servers.map((s) => [s.name, s.verdict, s.timed_out]),
        [
          ["ci", "object", false],
          ["lint", "allow", false],
          ["approval", "object", false],
        ],
      );
    });

    test("nobody objecting answers an empty text", async () => {
      const quiet = await startProxy({ servers: { a: gate(), b: gate() } }, {}, { transport });
      try {
        const r = await quiet.call("_Stop");
        assert.equal(textOf(r), "");
        assert.ok(!r.isError);
      } finally {
        await quiet.close();
      }
    });
  });

  describe(`slow, failing and hung gates (${transport})`, () => {
    let p: RunningProxy;
    before(async () => {
      p = await startProxy(
        {
          servers: {
            fast: gate({ GATE_STOP_TEXT: "fast objection" }),
            slow: gate({ GATE_STOP_TEXT: "slow objection", GATE_DELAY_MS: "5000", GATE_COUNTER_FILE: counter(`slow-${transport}`) }),
            failing: gate({ GATE_HOOK_ERROR: "1" }, { on_error: "object" }),
            failsopen: gate({ GATE_HOOK_ERROR: "1" }),
          },
          hook_deadline: "1s",
        },
        {},
        { transport },
      );
    });
    after(() => p?.close());

    test("a gate sleeping 5 s does not hold the merged answer; it counts as no objection and is logged", async () => {
      await p.client.listTools();
      const before = lines(counter(`slow-${transport}`)).length;
      const r = await p.call("_Stop");
      // The merged answer came while the slow gate was still working on it: the proxy
      // cancelled its call at the deadline (the fixture logs the cancellation) instead of waiting.
      await waitFor(
        () =>
          lines(counter(`slow-${transport}`))
            .slice(before)
            .some((l) => l.startsWith("cancelled")),
        {
          what: "the slow gate's call to be cancelled at the deadline",
        },
      );
      const text = textOf(r);
      assert.match(text, /^\[fast\] fast objection/);
      assert.ok(!text.includes("slow objection"));
      assert.match(text, /\[failing\] _Stop could not be checked/, "on_error: object turns an error into an objection");
      assert.ok(!text.includes("[failsopen]"), "on_error: allow (default) fails open");
      const log = p
        .logs()
        .filter((l) => l.evt === "hook")
        .at(-1) as { servers: { name: string; timed_out: boolean; error?: string }[] };
      const slow = log.servers.find((s) => s.name === "slow")!;
      assert.equal(slow.timed_out, true);
      assert.ok(log.servers.find((s) => s.name === "failsopen")!.error);
    });
  });

  describe(`restart after two consecutive misses (${transport})`, () => {
    let p: RunningProxy;
    before(async () => {
      p = await startProxy(
        {
          servers: { hung: gate({ GATE_HANG: "1" }), ok: gate({ GATE_STOP_TEXT: "ok objects" }) },
          hook_deadline: "500ms",
        },
        {},
        { transport },
      );
    });
    after(() => p?.close());

    test("the hung gate is restarted after its second miss; answers stay on time", async () => {
      await p.client.listTools();
      const pid1 = textOf(await p.call("hung_pid"));
      // Each merged answer comes at the deadline: the hung gate is logged as timed out, never waited for.
      const timed = async () => {
        const text = textOf(await p.call("_Stop"));
        const log = p
          .logs()
          .filter((l) => l.evt === "hook")
          .at(-1) as { servers: { name: string; timed_out: boolean }[] };
        assert.deepEqual(
          log.servers.map((s) => [s.name, s.timed_out]),
          [
            ["hung", true],
            ["ok", false],
          ],
        );
        return text;
      };
      assert.equal(await timed(), "[ok] ok objects");
      assert.ok(!p.logs().some((l) => l.evt === "proxy.server_restart"), "one miss is tolerated");
      assert.equal(await timed(), "[ok] ok objects");
      const restart = p.logs().find((l) => l.evt === "proxy.server_restart");
      assert.equal(restart?.server, "hung");
      const newPid = async () => {
        const r = await p.call("hung_pid");
        return !r.isError && textOf(r) !== pid1 && textOf(r);
      };
      const pid2 = await waitFor(newPid, { timeoutMs: 10_000, intervalMs: 100, what: "a new process to serve the hung gate" });
      assert.ok(pid2 && pid2 !== pid1, "a new process serves the hung gate");
    });
  });

  describe(`the fan-out is parallel: two hung gates under one deadline (${transport})`, () => {
    let p: RunningProxy;
    const calls = counter(`parallel-calls-${transport}`);
    before(async () => {
      p = await startProxy(
        {
          servers: {
            // First in config order, it answers only once both hung gates have been called:
            // in a fan-out that asks one gate after another it would wait for calls that come
            // only after its own answer, and miss the deadline.
            together: gate({ GATE_STOP_TEXT: "all gates were asked at once", GATE_AWAIT_FILE: calls, GATE_AWAIT_CALLS: "2" }),
            hung1: gate({ GATE_HANG: "1", GATE_COUNTER_FILE: calls }),
            hung2: gate({ GATE_HANG: "1", GATE_COUNTER_FILE: calls }),
          },
          hook_deadline: "2s",
        },
        {},
        { transport },
      );
    });
    after(() => p?.close());

    test("one merged answer within the one deadline: both hung gates timed out in it, the gate that waited for them answered", async () => {
      await p.client.listTools();
      const r = await p.call("_Stop");
      assert.equal(textOf(r), "[together] all gates were asked at once");
      assert.ok(!r.isError);
      const fanouts = p.logs().filter((l) => l.evt === "hook" && l.hook === "_Stop") as Array<{
        servers: { name: string; verdict: string; timed_out: boolean }[];
      }>;
      assert.equal(fanouts.length, 1, "one fan-out, one log line");
      assert.deepEqual(
        fanouts[0]!.servers.map((s) => [s.name, s.verdict, s.timed_out]),
        [
          ["together", "object", false],
          ["hung1", "allow", true],
          ["hung2", "allow", true],
        ],
      );
      assert.equal(lines(calls).filter((l) => l.startsWith("_Stop ")).length, 2, "each hung gate was called once");
    });
  });
}
