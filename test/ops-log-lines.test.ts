/**
 * Log lines an operator reads: every line has a headline (`msg`), a proxy's pid does not
 * overwrite the daemon's, authors are npubs in `gate.accepted` as in `gate.denied`, and a
 * clean shutdown warns about nothing.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { HEADLINES } from "../src/base/log-headlines.js";
import { createLogger } from "../src/base/log.js";
import { REPO, World } from "./fixtures/world.js";

/** Log calls that pass fields only, found in the sources: `.info({ evt: "x", … });`. */
function fieldsOnlyEvents(): string[] {
  const found = new Set<string>();
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.endsWith(".ts")) {
        for (const m of readFileSync(p, "utf8").matchAll(/\.(?:info|warn|error|debug|fatal|trace)\(\{ evt: "([a-z_.]+)"[^;\n]*\}\);/g)) {
          if (!/\}, [`"'a-zA-Z]/.test(m[0]) && !/\bmsg:/.test(m[0])) found.add(m[1]!);
        }
      }
    }
  };
  walk(join(REPO, "src"));
  return [...found].sort();
}

test("every event logged with fields only has a headline, and the logger adds it", () => {
  const events = fieldsOnlyEvents();
  assert.ok(events.length > 0);
  assert.deepEqual(events.filter((e) => !(e in HEADLINES)), [], "add these to src/base/log-headlines.ts");
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ destination: { write: (l: string) => lines.push(JSON.parse(l)) } as unknown as NodeJS.WritableStream });
  logger.info({ evt: "queue.turn_retry", turn: 1 });
  logger.info({ evt: "never.heard.of" });
  logger.info({ evt: "link.connected" }, "its own words");
  assert.deepEqual(lines.map((l) => l.msg), [HEADLINES["queue.turn_retry"], "never.heard.of", "its own words"]);
});

let w: World;
before(async () => {
  w = await World.create();
});
after(() => w.close());

test("a daemon's lines: msg on every line, one pid, npub authors, no warning on a clean shutdown", async () => {
  const d = await w.startDaemon({ defaults: { respond_to: "owner-only", on_denied: "silent" }, relay: { presence: false } });
  const ev = await w.owner.post("@agent hello");
  await w.waitReplies(ev);
  const denied = await w.stranger.post("@agent let me in");
  await d.waitLog((l) => l.evt === "gate.denied" && l.event === denied.id);
  assert.equal(await d.stop(), 0);

  const connected = d.logs.find((l) => l.evt === "link.connected");
  assert.ok(connected, d.raw().slice(-2000));
  assert.equal(connected.pid, d.proc.pid, "pid is the daemon's");
  assert.equal(typeof connected.proxy_pid, "number");
  assert.notEqual(connected.proxy_pid, d.proc.pid);
  const accepted = d.logs.find((l) => l.evt === "gate.accepted" && l.event === ev.id);
  assert.equal(accepted?.author, w.owner.npub);
  assert.equal(d.logs.find((l) => l.evt === "gate.denied" && l.event === denied.id)?.author, w.stranger.npub);
  assert.deepEqual(d.logs.filter((l) => typeof l.msg !== "string" || l.msg === "").map((l) => l.evt), [], "every line has a headline");
  const afterStop = d.logs.slice(d.logs.findIndex((l) => l.evt === "daemon.stopping"));
  assert.deepEqual(afterStop.filter((l) => l.level === "warn" || l.level === "error").map((l) => `${l.evt}: ${l.msg}`), [], "a clean shutdown warns about nothing");
});
