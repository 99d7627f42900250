/**
 * Log lines an operator reads: every line has a headline (`msg`), a proxy's pid does not
 * overwrite the daemon's, authors are npubs in `gate.accepted` as in `gate.denied`, and a
 * clean shutdown warns about nothing.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseSync } from "@swc/core";
import { HEADLINES } from "../src/base/log-headlines.js";
import { createLogger } from "../src/base/log.js";
import { REPO, World } from "../kit/world.js";

const LEVELS = new Set(["info", "warn", "error", "debug", "fatal", "trace"]);

/** A property's name in an object literal, when it is written out (`evt:` or `"evt":`). */
function keyName(p: any): string | undefined {
  return p.type === "KeyValueProperty" && (p.key.type === "Identifier" || p.key.type === "StringLiteral") ? p.key.value : undefined;
}

/**
 * The `evt` of a log call that passes fields only: `x.info({ evt: "name", … })` with one
 * argument, an object literal with a string `evt` and no `msg` (`logger?.info(…)` too). Read from the syntax tree
 * (swc), so a call is found however it is laid out over lines.
 */
function fieldsOnlyEvent(node: any): string | undefined {
  if (node.type !== "CallExpression") return undefined;
  const callee = node.callee.type === "OptionalChainingExpression" ? node.callee.base : node.callee; // logger?.warn(…)
  if (callee.type !== "MemberExpression" || callee.property.type !== "Identifier" || !LEVELS.has(callee.property.value)) return undefined;
  if (node.arguments.length !== 1 || node.arguments[0].spread || node.arguments[0].expression.type !== "ObjectExpression") return undefined;
  const props: any[] = node.arguments[0].expression.properties;
  if (props.some((p) => keyName(p) === "msg")) return undefined;
  const evt = props.find((p) => keyName(p) === "evt");
  return evt?.value.type === "StringLiteral" ? evt.value.value : undefined;
}

/** Every node of a syntax tree, depth first. */
function* nodes(node: unknown): Generator<any> {
  if (Array.isArray(node)) for (const n of node) yield* nodes(n);
  else if (node && typeof node === "object") {
    if (typeof (node as { type?: unknown }).type === "string") yield node;
    for (const v of Object.values(node)) if (v && typeof v === "object") yield* nodes(v);
  }
}

/** Log calls that pass fields only, found in the sources: `.info({ evt: "x", … })`. */
function fieldsOnlyEvents(): string[] {
  const found = new Set<string>();
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.endsWith(".ts")) {
        const ast = parseSync(readFileSync(p, "utf8"), { syntax: "typescript" });
        for (const n of nodes(ast.body)) {
          const evt = fieldsOnlyEvent(n);
          if (evt) found.add(evt);
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
  assert.deepEqual(
    events.filter((e) => !(e in HEADLINES)),
    [],
    "add these to src/base/log-headlines.ts",
  );
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ destination: { write: (l: string) => lines.push(JSON.parse(l)) } as unknown as NodeJS.WritableStream });
  logger.info({ evt: "queue.turn_retry", turn: 1 });
  logger.info({ evt: "never.heard.of" });
  logger.info({ evt: "link.connected" }, "its own words");
  assert.deepEqual(
    lines.map((l) => l.msg),
    [HEADLINES["queue.turn_retry"], "never.heard.of", "its own words"],
  );
});

let w: World;
before(async () => {
  w = await World.create();
});
after(() => w.close());

test("a daemon's lines: msg on every line, one pid, npub authors, no warning on a clean shutdown", async () => {
  const d = await w.startDaemon({ defaults: { respond_to: "owner-only", on_denied: "silent" }, relay: { presence: false } });
  const ev = await w.owner.post("@agent hello");
  await w.waitReply(ev);
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
  assert.deepEqual(
    d.logs.filter((l) => typeof l.msg !== "string" || l.msg === "").map((l) => l.evt),
    [],
    "every line has a headline",
  );
  const afterStop = d.logs.slice(d.logs.findIndex((l) => l.evt === "daemon.stopping"));
  assert.deepEqual(
    afterStop.filter((l) => l.level === "warn" || l.level === "error").map((l) => `${l.evt}: ${l.msg}`),
    [],
    "a clean shutdown warns about nothing",
  );
});
