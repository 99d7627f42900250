import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadManifestFile, manifestFromConfig, ManifestError } from "../src/proxy/manifest.js";
import { CLI } from "./fixtures/proxy-harness.js";

const dir = mkdtempSync(join(tmpdir(), "proxy-manifest-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const f = join(dir, name);
  writeFileSync(f, text);
  return f;
};

test("a manifest file reads like the config's mcp section, in config order", () => {
  const m = loadManifestFile(
    file(
      "ok.yaml",
      "servers:\n  dev: { command: dev-mcp, prefix: false }\n  ci: { command: ci-gate, env: { CI_GATE_REPO: o/r }, on_error: object, timeout: 90s }\nhook_deadline: 1500ms\n",
    ),
  );
  assert.deepEqual(
    m.servers.map((s) => s.name),
    ["dev", "ci"],
  );
  assert.equal(m.servers[0]!.prefix, false);
  assert.equal(m.servers[0]!.timeout, 600_000, "a server that sets no timeout gets the default, 10m");
  assert.equal(m.servers[1]!.timeout, 90_000);
  assert.equal(m.servers[1]!.on_error, "object");
  assert.equal(m.hook_deadline, 1500);
  assert.equal(m.list_timeout, 15_000);
});

test("errors name the file and the key", () => {
  assert.throws(
    () => loadManifestFile(file("typo.yaml", "servers:\n  ci: { comand: x }\n")),
    (e: Error) =>
      e instanceof ManifestError &&
      e.message ===
        "typo.yaml:2:7: servers.ci.command: required key is missing\ntypo.yaml:2:9: servers.ci.comand: unknown key 'comand'".replaceAll(
          "typo.yaml",
          join(dir, "typo.yaml"),
        ),
  );
  assert.throws(
    () => loadManifestFile(file("yaml.yaml", "servers: [\n")),
    (e: Error) => /yaml\.yaml:\d+:\d+/.test(e.message),
  );
  assert.throws(() => loadManifestFile(join(dir, "missing.yaml")), /missing\.yaml: cannot read/);
});

test("the config's mcp section copies into a manifest file as is, and is checked by the same rules", () => {
  const m = loadManifestFile(
    file(
      "section.yaml",
      "servers:\n  gate: { command: gate-mcp, stop: wait, hold_replies: true, pre_tool: block }\ntransport: auto\npre_tool_deadline: 3s\n",
    ),
  );
  assert.equal(m.servers[0]!.on_error, "object", "a stop: wait server fails closed unless it says otherwise");
  assert.equal(m.servers[0]!.pre_tool, "block");
  assert.equal(m.pre_tool_deadline, 3000);
  assert.throws(
    () => loadManifestFile(file("hold.yaml", "servers:\n  dev: { command: dev-mcp, hold_replies: true }\n")),
    /hold\.yaml:2:\d+: servers\.dev\.hold_replies: hold_replies: true holds the agent's posts until this server approves/,
  );
});

test("manifestFromConfig keeps only the channel's servers, in config order", () => {
  const servers = {
    a: {
      command: "a",
      args: [],
      env: {},
      prefix: true,
      stop: "reprompt" as const,
      on_error: "allow" as const,
      timeout: 600_000,
      hold_replies: false,
    },
    b: {
      command: "b",
      args: [],
      env: {},
      prefix: false,
      stop: "wait" as const,
      on_error: "object" as const,
      timeout: 600_000,
      hold_replies: false,
    },
    c: {
      command: "c",
      args: [],
      env: {},
      prefix: true,
      stop: "reprompt" as const,
      on_error: "allow" as const,
      timeout: 600_000,
      hold_replies: false,
    },
  };
  const m = manifestFromConfig({ servers, hook_deadline: 2000, list_timeout: 15000 }, ["c", "a"]);
  assert.deepEqual(
    m.servers.map((s) => s.name),
    ["a", "c"],
  );
});

test("mcp-proxy with a bad manifest exits 1 naming the file", () => {
  const r = spawnSync(process.execPath, [CLI, "mcp-proxy", "--manifest", file("bad.yaml", "servers:\n  x: { command: '' }\n")], {
    encoding: "utf8",
    timeout: 20_000,
  });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /bad\.yaml:2:\d+: servers\.x\.command: /);
});
