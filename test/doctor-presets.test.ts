/**
 * `doctor` with an agent preset, and `buzz-bridge agents`, as a person runs them: the real
 * agents (devDependencies on PATH from node_modules/.bin, and opencode from the test cache of
 * ./fixtures/opencode-install.ts) are started by doctor and pointed at
 * its probe model, so what the check reports is what the agent offered its model.
 *
 * - claude as the preset sets it: ✓ install with the version, ✓ key, ✓ the bridge's tools as
 *   Claude names them; with ENABLE_TOOL_SEARCH=true in agent.env and no key: ✗ key, ✗ tools
 *   hidden behind ToolSearch, each with the fix.
 * - gemini with GEMINI_CLI_TRUST_WORKSPACE=false in agent.env: ✗ the MCP server dropped.
 * - `agents`: the installed presets with their version, the others with how to install them.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { CLI, REPO, World } from "../kit/world.js";
import { opencodeBinDir } from "./fixtures/opencode-install.js";

let w: World;
before(async () => {
  w = await World.create({ channelName: "build-room" });
});
after(() => w.close());

const PATH = `${opencodeBinDir()}:${join(REPO, "node_modules", ".bin")}:${process.env.PATH ?? ""}`;

function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [CLI, ...args], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, PATH, ...env } });
    let out = "";
    proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
    proc.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const kill = setTimeout(() => proc.kill("SIGKILL"), 240_000);
    proc.on("error", reject);
    proc.on("exit", (code) => {
      clearTimeout(kill);
      resolve({ code, out });
    });
  });
}

const doctor = (name: string, agent: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) =>
  run(
    ["doctor", "-c", w.writeConfig({ agent: { command: undefined, args: undefined, ...agent } }, `${name}.yaml`), "--timeout", "30s"],
    env,
  );

function line(r: { out: string }, name: string): string {
  const l = r.out.split("\n").find((x) => new RegExp(`^[✓✗–] ${name.replace(/ /g, "\\s")}\\s`).test(x));
  assert.ok(l, `no '${name}' line in:\n${r.out}`);
  return l;
}

test("doctor with presets: install, key and the tools as the agent offers them to its model; each ✗ with its fix", {
  timeout: 300_000,
}, async () => {
  // The daemon's own environment must not lend the agent a key here.
  const noKeys = { ANTHROPIC_API_KEY: "", CLAUDE_CODE_OAUTH_TOKEN: "", ANTHROPIC_AUTH_TOKEN: "", GEMINI_API_KEY: "", GOOGLE_API_KEY: "" };
  const [good, hidden, untrusted] = await Promise.all([
    doctor("claude-good", { preset: "claude", env: { ANTHROPIC_API_KEY: "sk-test" } }, noKeys),
    doctor("claude-search", { preset: "claude", env: { ENABLE_TOOL_SEARCH: "true" } }, noKeys),
    doctor("gemini-untrusted", { preset: "gemini", env: { GEMINI_API_KEY: "test", GEMINI_CLI_TRUST_WORKSPACE: "false" } }, noKeys),
  ]);

  assert.match(line(good, "agent install"), /^✓ .*Claude Code \(claude-agent-acp\): \S+claude-agent-acp\S* \(0\.\d+\.\d+\)/);
  assert.match(line(good, "agent key"), /^✓ .*ANTHROPIC_API_KEY set for the agent/);
  assert.match(line(good, "agent tools"), /^✓ .*the model is offered the bridge's tools: .*mcp__buzz__send_message/);

  assert.match(line(hidden, "agent key"), /^✗ .*none of ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN, ANTHROPIC_AUTH_TOKEN is set/);
  assert.match(line(hidden, "agent tools"), /^✗ .*hidden behind the agent's ToolSearch: .*ENABLE_TOOL_SEARCH=false/);
  assert.equal(hidden.code, 1);

  assert.match(line(untrusted, "agent tools"), /^✗ .*the agent dropped the bridge's MCP server .*GEMINI_CLI_TRUST_WORKSPACE=true/);
  assert.match(line(untrusted, "agent key"), /^✓ /);
});

test("buzz-bridge agents: every preset, the installed ones with path and version, the others with how to install them", async () => {
  const r = await run(["agents"]);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /^✓ claude\s+Claude Code \(claude-agent-acp\) — claude-agent-acp\n\s+installed: \S+ \(0\.\d+\.\d+\)/m);
  assert.match(r.out, /^✓ gemini\s+Gemini CLI — gemini --acp\n\s+installed: \S+ \(\d+\.\d+\.\d+\)/m);
  assert.match(r.out, /^– goose\s+Goose — goose acp\n\s+not installed; install: curl -fsSL \S+download_cli\.sh/m);
  assert.match(r.out, /needs: ANTHROPIC_API_KEY/);
  const json = JSON.parse((await run(["agents", "--json"])).out) as Array<{ preset: string; installed: boolean; verified: string }>;
  assert.deepEqual(
    json.map((p) => p.preset),
    ["claude", "codex", "gemini", "opencode", "qwen", "goose", "copilot", "kilo", "cline", "cursor", "auggie", "pi"],
  );
  assert.deepEqual(
    json.filter((p) => p.verified === "ci").map((p) => [p.preset, p.installed]),
    [
      ["claude", true],
      ["codex", true],
      ["gemini", true],
      ["opencode", true],
    ],
    "the four agents the suite runs are installed (devDependencies, opencode in the test cache)",
  );
});
