/**
 * `doctor` with the claude preset against the scripted model (./fixtures/fake-llm.ts), run as
 * an operator runs it: the `provider` line ✓ with the model and exit 0 while the key works;
 * ✗ naming the variable and exit 1 when the provider refuses it. The agents doctor starts
 * get a HOME of doctor's own: the operator's HOME (a fresh folder here) is left untouched.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI, REPO, World } from "../kit/world.js";
import { startFakeLlm, providerFailure, type FakeLlm } from "./fixtures/fake-llm.js";

let w: World;
let api: FakeLlm;
const home = mkdtempSync(join(tmpdir(), "bb-operator-home-"));
before(async () => {
  w = await World.create({ channelName: "build-room" });
  api = await startFakeLlm();
});
after(async () => {
  await w.close();
  await api.close();
  rmSync(home, { recursive: true, force: true });
});

const PATH = `${join(REPO, "node_modules", ".bin")}:${process.env.PATH ?? ""}`;

function doctor(base = api.url): Promise<{ code: number | null; out: string }> {
  const config = w.writeConfig(
    {
      agent: {
        command: undefined,
        args: undefined,
        preset: "claude",
        provider: { base_url: base, model: "claude-gateway-model" },
        env: { ANTHROPIC_API_KEY: "sk-operator" },
      },
    },
    "provider.yaml",
  );
  return new Promise((resolve, reject) => {
    const env = { ...process.env, PATH, HOME: home, XDG_CONFIG_HOME: "", XDG_DATA_HOME: "", XDG_STATE_HOME: "", XDG_CACHE_HOME: "" };
    const proc = spawn(process.execPath, [CLI, "doctor", "-c", config, "--timeout", "30s"], { stdio: ["ignore", "pipe", "pipe"], env });
    let out = "";
    proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
    proc.stderr.on("data", (d: Buffer) => (out += d.toString()));
    proc.on("error", reject);
    proc.on("exit", (code) => resolve({ code, out }));
  });
}

const line = (out: string, name: string) =>
  out.split("\n").find((x) => new RegExp(`^[✓✗–] ${name}\\s`).test(x)) ?? `no ${name} line in:\n${out}`;

test("doctor: ✓ provider with the model, exit 0, and the operator's HOME untouched; ✗ naming the key's variable when refused, exit 1", {
  timeout: 300_000,
}, async () => {
  const good = await doctor();
  // Agents run sandboxed on a network of their own here (.ci/run installs bubblewrap and slirp4netns):
  // the provider is asked from there, through the loopback port the base URL names.
  assert.match(
    line(good.out, "provider"),
    /^✓ provider\s+.*answered with the model 'claude-gateway-model' \(asked from the agent's sandbox: a network of its own/,
  );
  assert.equal(good.code, 0, good.out);
  assert.ok(
    api.requests.some((r) => r.headers["x-api-key"] === "sk-operator" && r.model === "claude-gateway-model"),
    "asked with the agent's own key and model",
  );
  assert.deepEqual(readdirSync(home), [], "nothing written into the operator's HOME");

  api.script({ fail: providerFailure("anthropic", "auth") });
  const bad = await doctor();
  assert.match(line(bad.out, "provider"), /^✗ provider\s+.*refused the key: 401 invalid x-api-key; check ANTHROPIC_API_KEY/);
  assert.equal(bad.code, 1);
  assert.deepEqual(readdirSync(home), []);
});

test("doctor asks the provider from the agent's network: a gateway the host reaches but the agent's sandbox does not is ✗, nothing listening", {
  timeout: 300_000,
}, async () => {
  // All of 127/8 is the host's loopback; the sandbox's network carries in only the
  // 127.0.0.1/localhost ports the config names, so 127.0.0.2 is out of the agent's reach.
  const elsewhere = await startFakeLlm({}, "127.0.0.2");
  try {
    const r = await doctor(elsewhere.url);
    assert.match(
      line(r.out, "provider"),
      /^✗ provider\s+.*nothing listening there \(connection refused\) \(asked from the agent's sandbox/,
    );
    assert.equal(r.code, 1);
    assert.equal(elsewhere.requests.length, 0, "the host's view (which reaches it) was not taken for the agent's");
  } finally {
    await elsewhere.close();
  }
});
