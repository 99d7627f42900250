import { test } from "node:test";
import assert from "node:assert/strict";
import { exposedName, isValidExposedName, NAME_BUDGET, AGENT_PREFIX, MAX_QUALIFIED_NAME } from "../../src/proxy/naming.js";
import { mergeHookTexts, MAX_HOOK_TEXT_BYTES } from "../../src/proxy/hooks.js";
import { downstreamEnv } from "../../src/proxy/env.js";

test("the name budget leaves room for the agent's mcp__buzz__ prefix", () => {
  assert.equal(AGENT_PREFIX, "mcp__buzz__");
  assert.equal(NAME_BUDGET + AGENT_PREFIX.length, MAX_QUALIFIED_NAME);
});

test("prefix false keeps names, others become server_tool", () => {
  assert.deepEqual(exposedName("dev", "shell", false), { name: "shell", changed: false });
  assert.deepEqual(exposedName("ci", "send_message", true), { name: "ci_send_message", changed: false });
});

test("invalid characters, double underscores and long names are fixed deterministically", () => {
  const dotted = exposedName("fs", "read.file", true);
  assert.equal(dotted.name, "fs_read-file");
  assert.ok(dotted.changed);
  assert.equal(exposedName("x", "a__b", false).name, "a_b");
  const long = "a".repeat(70);
  const one = exposedName("server", long, true);
  const two = exposedName("server", long, true);
  assert.equal(one.name, two.name);
  assert.ok(one.name.length <= NAME_BUDGET);
  assert.ok(isValidExposedName(one.name));
  assert.notEqual(exposedName("server", "a".repeat(69) + "b", true).name, one.name, "different long names stay different");
});

test("merged hook text: config order, [server] prefix, blank lines, empty when nobody objects", () => {
  assert.equal(
    mergeHookTexts([
      { name: "a", text: "" },
      { name: "b", text: "  \n" },
    ]),
    "",
  );
  assert.equal(
    mergeHookTexts([
      { name: "ci", text: " red \n" },
      { name: "ok", text: "" },
      { name: "ap", text: "wait" },
    ]),
    "[ci] red\n\n[ap] wait",
  );
});

test("merged hook text stays within 16 KiB with a fair share per server", () => {
  const merged = mergeHookTexts([
    { name: "short", text: "tiny objection" },
    { name: "big1", text: "x".repeat(40_000) },
    { name: "big2", text: "é".repeat(40_000) },
  ]);
  assert.ok(Buffer.byteLength(merged) <= MAX_HOOK_TEXT_BYTES);
  const [short, big1, big2] = merged.split("\n\n");
  assert.equal(short, "[short] tiny objection");
  assert.ok(big1!.startsWith("[big1] x") && big2!.startsWith("[big2] é"));
  assert.ok(Math.abs(Buffer.byteLength(big1!) - Buffer.byteLength(big2!)) < 8, "the two long answers share equally");
  assert.ok(!merged.includes("\uFFFD"), "no character is cut in half");
});

test("downstream env: allow-list plus configured env, never keys or the link token", () => {
  const env = downstreamEnv(
    { CI_GATE_REPO: "o/r", BUZZ_PRIVATE_KEY: "nsec1zzz" },
    { PATH: "/bin", HOME: "/h", NOSTR_PRIVATE_KEY: "k", BUZZ_BRIDGE_LINK_TOKEN: "t", SECRET_THING: "s" },
  );
  assert.deepEqual(env, { PATH: "/bin", HOME: "/h", CI_GATE_REPO: "o/r" });
});

test("the catalog caps the union at 128 tools, keeping hooks and built-ins, and merges hooks", async () => {
  const { buildCatalog } = await import("../../src/proxy/catalog.js");
  const { Downstream } = await import("../../src/proxy/downstream.js");
  const { BUZZ_TOOLS } = await import("../../src/proxy/buzz-tool-listing.js");
  const { silentLogger } = await import("../../src/base/log.js");
  const logger = silentLogger();
  const mk = (name: string, tools: string[], prefix = true) => {
    const d = new Downstream(
      { name, command: "none", args: [], env: {}, prefix, stop: "reprompt", on_error: "allow" },
      { logger, listTimeoutMs: 1000, events: { changed: () => {} } },
    );
    d.tools = tools.map((t) => ({ name: t, inputSchema: { type: "object" as const } }));
    return d;
  };
  const many = mk(
    "big",
    Array.from({ length: 130 }, (_, i) => `t${i}`),
  );
  const gates = [mk("ci", ["_Stop", "_PostCompact"]), mk("ap", ["_Stop", "send_message"])];
  const cat = buildCatalog([many, ...gates], BUZZ_TOOLS, logger);
  assert.equal(cat.tools.length, 128);
  assert.equal(cat.tools.filter((t) => t.name === "_Stop").length, 1);
  assert.deepEqual(
    cat.hooks.get("_Stop")!.map((d) => d.name),
    ["ci", "ap"],
  );
  assert.deepEqual(
    cat.hooks.get("_PostCompact")!.map((d) => d.name),
    ["ci"],
  );
  for (const b of BUZZ_TOOLS) assert.ok(cat.tools.some((t) => t.name === b.name));
  assert.equal(cat.collision, undefined);
  const clash = buildCatalog([mk("dev", ["send_message"], false)], BUZZ_TOOLS, logger);
  assert.match(clash.collision?.message ?? "", /'send_message' is offered by both 'buzz \(built-in tools\)' and 'dev'/);
});

test("the catalog returns what the naming rules changed, in the order met: renamed tools, invalid hooks, dropped tools", async () => {
  const { buildCatalog } = await import("../../src/proxy/catalog.js");
  const { Downstream } = await import("../../src/proxy/downstream.js");
  const { BUZZ_TOOLS } = await import("../../src/proxy/buzz-tool-listing.js");
  const { silentLogger } = await import("../../src/base/log.js");
  const logger = silentLogger();
  const mk = (name: string, tools: string[]) => {
    const d = new Downstream(
      { name, command: "none", args: [], env: {}, prefix: true, stop: "reprompt", on_error: "allow" },
      { logger, listTimeoutMs: 1000, events: { changed: () => {} } },
    );
    d.tools = tools.map((t) => ({ name: t, inputSchema: { type: "object" as const } }));
    return d;
  };
  const clean = buildCatalog([mk("dev", ["run", "_Stop"])], BUZZ_TOOLS, logger);
  assert.deepEqual(clean.notes, []);
  const odd = mk("odd", ["a__b", "_Bad.Hook"]);
  const big = mk(
    "big",
    Array.from({ length: 130 }, (_, i) => `t${i}`),
  );
  const cat = buildCatalog([odd, big], BUZZ_TOOLS, logger);
  assert.equal(cat.notes.length, 3);
  const [renamed, hook, dropped] = cat.notes;
  assert.equal(renamed?.kind, "renamed");
  assert.ok(renamed?.kind === "renamed" && renamed.server === "odd" && renamed.tool === "a__b" && !renamed.as.includes("__"));
  assert.deepEqual(hook, { kind: "hook_name_invalid", server: "odd", tool: "_Bad.Hook" });
  assert.ok(dropped?.kind === "too_many_tools");
  assert.equal(dropped.limit, 128);
  assert.equal(dropped.dropped.length, 1 + 130 + BUZZ_TOOLS.length - 128);
});
