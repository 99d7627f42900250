// Bad agent commands fail at start with an AgentStartError that names the command and says what went wrong.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { AgentProcess, AgentStartError, agentEnvironment, probeAgent, AgentModeError } from "../src/agent/index.js";
import { CLI, FIXTURES, tempDir } from "./fixtures/agent-helpers.js";

const tmp = tempDir();
after(() => tmp.cleanup());
const env = agentEnvironment().env;
const bad = join(FIXTURES, "agent-bad.mjs");

async function startError(command: string, args: string[], initTimeoutMs = 5_000): Promise<AgentStartError> {
  const err = await AgentProcess.start({ command, args, cwd: tmp.dir, env, initTimeoutMs }).then(
    (p) => {
      p.kill();
      throw new Error("expected a start failure");
    },
    (e: unknown) => e,
  );
  assert.ok(err instanceof AgentStartError, `expected AgentStartError, got ${String(err)}`);
  return err;
}

describe("agent start-up errors", () => {
  it("a command that does not exist", async () => {
    const err = await startError("/nonexistent/buzz-agent-acp", []);
    assert.match(err.message, /agent '\/nonexistent\/buzz-agent-acp' failed to start: command not found/);
  });

  it("a command that exits at once, with its stderr in the error", async () => {
    const err = await startError(process.execPath, [bad, "exit"]);
    assert.ok(err.message.includes(`${process.execPath} ${bad} exit`), err.message);
    assert.match(err.reason, /exited at once \(code 3\)/);
    assert.match(err.stderrTail, /fatal: no config found/);
  });

  it("a command that prints non-JSON on stdout (not an ACP agent)", async () => {
    const err = await startError(process.execPath, [bad, "nonjson"]);
    assert.match(err.reason, /non-JSON on stdout \("Usage: some-cli/);
    assert.match(err.reason, /is this an ACP agent/);
  });

  it("a command that never answers initialize", async () => {
    const err = await startError(process.execPath, [bad, "silent"], 500);
    assert.match(err.reason, /did not answer ACP initialize within/);
    assert.ok(err.message.includes(bad));
  });

  it("an agent answering an unsupported protocol version", async () => {
    const err = await startError(process.execPath, [bad, "version2"]);
    assert.match(err.reason, /protocol version 2; buzz-bridge speaks version 1/);
  });

  it("the demo agent initializes and reports who it is", async () => {
    const proc = await AgentProcess.start({ command: process.execPath, args: [CLI, "demo-agent"], cwd: tmp.dir, env });
    try {
      assert.equal(proc.agentInfo?.name, "buzz-bridge-demo-agent");
      assert.equal(proc.capabilities.loadSession, false);
    } finally {
      const exit = await proc.close(500);
      assert.equal(exit.expected, true);
    }
  });

  it("agent.auth_method: ACP authenticate after initialize; a method the agent does not offer is refused by name", async () => {
    const proc = await AgentProcess.start({
      command: process.execPath,
      args: [CLI, "demo-agent"],
      cwd: tmp.dir,
      env,
      authMethod: "demo-token",
    });
    await proc.close(500);
    const err = await AgentProcess.start({
      command: process.execPath,
      args: [CLI, "demo-agent"],
      cwd: tmp.dir,
      env,
      authMethod: "api-key",
    }).then(
      (p) => (p.kill(), undefined),
      (e: unknown) => e,
    );
    assert.ok(err instanceof AgentStartError);
    assert.match(err.reason, /does not offer auth method 'api-key' \(agent\.auth_method\); it offers: demo-token/);
  });

  it("doctor's probe checks agent.mode against the agent's modes", async () => {
    const ok = await probeAgent({ command: process.execPath, args: [CLI, "demo-agent"], env: {}, mode: "bypassPermissions" });
    assert.deepEqual(ok.modes, ["default", "bypassPermissions"]);
    await assert.rejects(
      probeAgent({ command: process.execPath, args: [CLI, "demo-agent"], env: {}, mode: "yolo" }),
      (e: unknown) =>
        e instanceof AgentModeError &&
        /agent.mode 'yolo' is not offered by the agent \(it offers: default, bypassPermissions\)/.test(e.message),
    );
  });
});
