/**
 * `agent.preset` and `agent.provider` in the config: a provider is mapped onto a preset's own
 * setting, so one without a preset, or with a preset that has no endpoint setting, or without
 * the model a preset needs, is refused with what to do; a preset fills in the command and
 * arguments that agent.command / agent.args did not give; a preset writes its settings files
 * into the directory the bridge gives it, never elsewhere.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateSecretKey, nip19 } from "nostr-tools";
import { ConfigError, loadConfigText } from "../../src/config/load.js";
import { resolveAgentCommand } from "../../src/config/agent-command.js";
import { agentLaunch, PRESETS } from "../../src/presets/index.js";

const nsec = nip19.nsecEncode(generateSecretKey());
const head = `identity:\n  secret_key: ${nsec}\nrelay:\n  url: ws://127.0.0.1:7777\n`;

function problems(agent: string): string[] {
  try {
    loadConfigText(`${head}agent:\n${agent}`, "t.yaml", {});
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.message.split("\n");
  }
  assert.fail("accepted");
}

test("agent.provider without a preset, with a vendor-only preset, or without a needed model: refused with the fix", () => {
  assert.match(problems(`  provider: { base_url: "http://127.0.0.1:4000", model: m }\n`)[0]!, /agent\.provider needs agent\.preset/);
  assert.match(
    problems(`  preset: cursor\n  provider: { base_url: "http://127.0.0.1:4000", model: m }\n`)[0]!,
    /the cursor preset talks only to its vendor's service .* presets that take agent\.provider: claude, codex, gemini, opencode, qwen, goose/,
  );
  assert.match(
    problems(`  preset: codex\n  provider: { base_url: "http://127.0.0.1:4000" }\n`)[0]!,
    /agent\.provider\.model: the codex preset needs agent\.provider\.model/,
  );
  assert.match(
    problems(`  preset: claude\n  model: haiku\n  provider: { base_url: "http://127.0.0.1:4000", model: m }\n`)[0]!,
    /give the model once/,
  );
  assert.match(problems(`  preset: nonesuch\n`)[0]!, /agent\.preset/);
});

test("a preset names the command and arguments; agent.command and agent.args replace them", () => {
  const load = (agent: string) => loadConfigText(`${head}agent:\n${agent}`, "t.yaml", {}).config.agent;
  assert.deepEqual(resolveAgentCommand(load("  preset: gemini\n")), { command: "gemini", args: ["--acp"] });
  assert.deepEqual(resolveAgentCommand(load("  preset: gemini\n  command: /opt/gemini/bin/gemini\n")), {
    command: "/opt/gemini/bin/gemini",
    args: ["--acp"],
  });
  assert.deepEqual(resolveAgentCommand(load("  preset: gemini\n  args: [--experimental-acp]\n")).args, ["--experimental-acp"]);
  assert.deepEqual(resolveAgentCommand(load("  env: {}\n")), { command: "claude-agent-acp", args: [] }, "no preset: the default agent");
});

test("a preset's settings files are written (0600) into the directory it is given, and its paths point there", () => {
  const dir = mkdtempSync(join(tmpdir(), "preset-files-"));
  try {
    const spec = agentLaunch(
      PRESETS.codex,
      { dir, sandboxed: false, root: false, provider: { base_url: "http://127.0.0.1:4000/v1/", model: "local-coder" } },
      undefined,
    );
    const catalog = join(dir, "codex", "models.json");
    assert.ok(existsSync(catalog), "the model catalog is written");
    assert.equal(statSync(catalog).mode & 0o777, 0o600);
    assert.equal((JSON.parse(readFileSync(catalog, "utf8")) as { models: { slug: string }[] }).models[0]!.slug, "local-coder");
    assert.ok(spec.argv.includes(`model_catalog_json=${JSON.stringify(catalog)}`), spec.argv.join(" "));
    assert.ok(
      spec.argv.some((a) => a.includes(`base_url = "http://127.0.0.1:4000/v1"`)),
      "the base URL without its trailing slash",
    );
    assert.equal(spec.sessionModel, undefined, "the provider's model is set at launch, not through the session");

    const qwen = agentLaunch(
      PRESETS.qwen,
      { dir, sandboxed: true, root: false, provider: { base_url: "http://h/v1", model: "q" } },
      undefined,
    );
    assert.equal(qwen.env.QWEN_HOME, join(dir, ".qwen"));
    const settings = JSON.parse(readFileSync(join(dir, ".qwen", "settings.json"), "utf8")) as { permissions: { deny: string[] } };
    assert.deepEqual(settings.permissions.deny, ["tool_search"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
