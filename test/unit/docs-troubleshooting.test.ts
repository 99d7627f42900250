/**
 * docs/troubleshooting.md covers what an operator meets: every log event the sources write
 * as a warning, an error or fatal (read from the syntax tree, so a new one without a row
 * fails here), and every check `doctor` prints a line for.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseSync } from "@swc/core";

const doc = readFileSync("docs/troubleshooting.md", "utf8");
const LOUD = new Set(["warn", "error", "fatal"]);

function* nodes(node: unknown): Generator<any> {
  if (Array.isArray(node)) for (const n of node) yield* nodes(n);
  else if (node && typeof node === "object") {
    if (typeof (node as { type?: unknown }).type === "string") yield node;
    for (const v of Object.values(node)) if (v && typeof v === "object") yield* nodes(v);
  }
}

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

const keyName = (p: any): string | undefined =>
  p.type === "KeyValueProperty" && (p.key.type === "Identifier" || p.key.type === "StringLiteral") ? p.key.value : undefined;

/** `log.warn({ evt: "x", … }, …)` and friends: the evt of every warning, error and fatal call. */
function loudEvents(): string[] {
  const found = new Set<string>();
  for (const f of files("src")) {
    for (const n of nodes(parseSync(readFileSync(f, "utf8"), { syntax: "typescript" }).body)) {
      if (n.type !== "CallExpression") continue;
      const callee = n.callee.type === "OptionalChainingExpression" ? n.callee.base : n.callee;
      if (callee.type !== "MemberExpression" || callee.property.type !== "Identifier" || !LOUD.has(callee.property.value)) continue;
      const fields = n.arguments[0]?.expression;
      if (fields?.type !== "ObjectExpression") continue;
      const evt = fields.properties.find((p: any) => keyName(p) === "evt");
      if (evt?.value.type === "StringLiteral") found.add(evt.value.value);
    }
  }
  return [...found].sort();
}

test("every warning, error and fatal log event has a row saying what it means and what to do", () => {
  const events = loudEvents();
  assert.ok(events.length > 30, `found ${events.length} events: the scan works`);
  assert.deepEqual(
    events.filter((e) => !doc.includes(`\`${e}\``)),
    [],
    "add a row to docs/troubleshooting.md for each",
  );
});

test("every check doctor prints has a section", () => {
  const names = new Set<string>();
  for (const f of files("src/app/doctor")) for (const m of readFileSync(f, "utf8").matchAll(/\bname: "([a-z ]+)"/g)) names.add(m[1]!);
  names.add("mcp"); // one line per server: `mcp <name>`
  const headings = doc
    .split("\n")
    .filter((l) => l.startsWith("### "))
    .join("\n");
  assert.ok(names.size >= 10, [...names].join(", "));
  assert.deepEqual(
    [...names].filter((n) => !new RegExp(`^### .*\\b${n}\\b`, "m").test(headings)),
    [],
  );
});
