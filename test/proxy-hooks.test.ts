/**
 * Merged hooks through the built proxy with real gate servers: attribution in config
 * order, exactly-once fan-out, the deadline, on_error, and restart after two misses; over
 * stdio and over the daemon's HTTP serving of the same aggregation.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TRANSPORTS, gate, startProxy, textOf, type RunningProxy } from "./fixtures/proxy-harness.js";
import { waitFor } from "./fixtures/wait.js";

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
            slow: gate({ GATE_STOP_TEXT: "slow objection", GATE_DELAY_MS: "5000", GATE_COUNTER_FILE: counter("slow") }),
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
      const t0 = Date.now();
      const r = await p.call("_Stop");
      const took = Date.now() - t0;
      assert.ok(took < 2500, `answered in ${took} ms: within buzz-agent's 2.5 s wait, long before the slow gate's 5 s`);
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
      const timed = async () => {
        const t0 = Date.now();
        const text = textOf(await p.call("_Stop"));
        const took = Date.now() - t0;
        assert.ok(took < 2500, `the merged _Stop came in ${took} ms, within buzz-agent's 2.5 s wait`);
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
}
