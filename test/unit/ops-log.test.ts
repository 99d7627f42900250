/**
 * The daemon logs its proxy's lines out of an agent's stderr (proxyLogLine) as its own
 * `proxy.log` line with the proxy's event, fields and level under `proxy`, at most at warn;
 * anything else stays text. And input others control is logged through a LogThrottle:
 * bounded, with the rest counted.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { createLogger, PROXY_LOGGER_NAME, proxyLogLine } from "../../src/base/log.js";
import { LogThrottle } from "../../src/base/log-throttle.js";
import { captureLogger } from "../../kit/queue-helpers.js";

function linesOf(name: string | undefined, write: (log: ReturnType<typeof createLogger>) => void): string[] {
  const out = new PassThrough();
  const chunks: string[] = [];
  out.on("data", (c: Buffer) => chunks.push(c.toString()));
  write(createLogger({ destination: out, name, level: "debug" }));
  return chunks.join("").trim().split("\n");
}

test("a line the proxy's logger wrote comes back under the daemon's proxy.log, its own fields under proxy", () => {
  const [line] = linesOf(PROXY_LOGGER_NAME, (log) =>
    log.warn({ evt: "hook", hook: "_Stop", servers: [{ name: "ci", verdict: "object" }] }, "merged"),
  );
  const got = proxyLogLine(line!);
  assert.ok(got);
  assert.equal(got.level, "warn");
  assert.equal(got.msg, "mcp-proxy: merged");
  assert.deepEqual(Object.keys(got.fields).sort(), ["evt", "proxy"], "nothing of theirs at the top");
  assert.equal(got.fields.evt, "proxy.log");
  const theirs = got.fields.proxy as Record<string, unknown>;
  assert.equal(theirs.evt, "hook");
  assert.equal(theirs.level, "warn");
  assert.deepEqual(theirs.servers, [{ name: "ci", verdict: "object" }]);
  assert.equal(typeof theirs.pid, "number");
  assert.equal(theirs.time, undefined, "the daemon stamps its own time");
});

test("a line posing as the daemon's (fatal, gate.accepted, a line break in msg) stays theirs: proxy.log, at most warn, one line", () => {
  const spoof = JSON.stringify({
    level: "fatal",
    name: PROXY_LOGGER_NAME,
    evt: "gate.accepted",
    event: "f".repeat(64),
    msg: 'mention accepted\n{"level":"fatal","evt":"daemon.stopping"}\u001b[2K',
  });
  const got = proxyLogLine(spoof)!;
  assert.equal(got.level, "warn");
  assert.equal(got.fields.evt, "proxy.log");
  assert.equal((got.fields.proxy as Record<string, unknown>).evt, "gate.accepted");
  assert.doesNotMatch(got.msg, /\p{Cc}/u, "no control character: no line break, no terminal escape");
});

test("other lines stay agent stderr text", () => {
  const [other] = linesOf("some-agent", (log) => log.info({ evt: "hook" }, "x"));
  const [noEvt] = linesOf(PROXY_LOGGER_NAME, (log) => log.info("no evt"));
  for (const line of [other!, noEvt!, "plain text", "{not json", '{"name":"mcp-proxy","evt":"hook","level":"loud"}']) {
    assert.equal(proxyLogLine(line), undefined, line);
  }
});

test("a throttled key logs its share of a window, then one line counts what it held back", async (t) => {
  // The window's end is a timer: mocked, so a loaded machine cannot end it before the flood is counted.
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const { logger, lines } = captureLogger("info");
  const throttle = new LogThrottle(logger, { perWindow: 2, windowMs: 80, summaryEvt: "test.suppressed" });
  for (let i = 0; i < 6; i++) throttle.warn("test.noise", { i }, "noise");
  throttle.log("info", "other", { evt: "test.other" });
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(
    lines.map((l) => l.i ?? l.evt),
    [0, 1, "test.other"],
    "two of the flood, and the other key untouched",
  );
  t.mock.timers.tick(80); // the 80 ms window ends and its one summary is written
  await new Promise((r) => setImmediate(r));
  const summary = lines.filter((l) => l.evt === "test.suppressed");
  assert.deepEqual(
    summary.map((l) => [l.key, l.suppressed, l.level]),
    [["test.noise", 4, "warn"]],
    "one count, at the key's level; none for a key that held nothing back",
  );
  throttle.warn("test.noise", { i: 6 }, "noise");
  await new Promise((r) => setImmediate(r));
  assert.equal(lines.at(-1)!.i, 6, "a new window logs again");
});
