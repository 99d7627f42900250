// Turn control with the real demo agent over stdio: timeouts, kill after grace,
// permissions, the standing-context paths, agent.mode and the agent's environment.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { nip19, generateSecretKey } from "nostr-tools";
import { bytesToHex } from "nostr-tools/utils";
import type { AgentPool, AskOwner } from "../src/agent/index.js";
import { AgentModeError } from "../src/agent/index.js";
import { STANDING, eventBlock, poolFixture } from "./fixtures/agent-helpers.js";
import { sleep } from "../kit/wait.js";

const { pool } = poolFixture();

describe("timeouts", () => {
  it("a hanging agent hits idle_timeout and is cancelled", async () => {
    const p = pool({ idleTimeoutMs: 1_000 });
    const s = await p.acquire("hang", { channel: { id: "general", name: "general" }, mcpEnv: {} });
    const r = await s.prompt([eventBlock("erin", "#hang")]);
    assert.equal(r.stopReason, "cancelled");
    assert.equal(r.timedOut, "idle");
    assert.equal(r.killed, false);
  });

  it("max_turn bounds a slow turn", async () => {
    const p = pool({ maxTurnMs: 1_000 });
    const s = await p.acquire("slow", { channel: { id: "general", name: "general" }, mcpEnv: {} });
    const r = await s.prompt([eventBlock("erin", "#slow 20000")]);
    assert.equal(r.stopReason, "cancelled");
    assert.equal(r.timedOut, "max_turn");
  });

  it("an agent ignoring session/cancel is killed after cancel_grace; the scope gets a new process", async () => {
    const p = pool({ idleTimeoutMs: 600, cancelGraceMs: 300 });
    const s = await p.acquire("ignore", { channel: { id: "general", name: "general" }, mcpEnv: {} });
    const crashes: unknown[] = [];
    p.on("crash", (c) => crashes.push(c));
    const r = await s.prompt([eventBlock("erin", "#ignore-cancel")]);
    assert.deepEqual([r.stopReason, r.timedOut, r.killed], ["cancelled", "idle", true]);
    assert.equal(s.alive, false);
    const again = await p.acquire("ignore", { channel: { id: "general", name: "general" }, mcpEnv: {} });
    assert.notEqual(again.proc.pid, s.proc.pid);
    assert.equal((await again.prompt([eventBlock("erin", "#final-only hi")])).stopReason, "end_turn");
    assert.equal(crashes.length, 0, "a kill by the bridge is not a crash");
  });
});

describe("permissions", () => {
  const policyPool = (policy: "allow" | "deny" | "ask-owner", permissionTimeoutMs = 5_000) =>
    pool({ permissions: policy, permissionTimeoutMs, idleTimeoutMs: 1_500 });
  const ask = (p: AgentPool, askOwner?: AskOwner) =>
    p
      .acquire("perm", { channel: { id: "general", name: "general" }, mcpEnv: {} })
      .then((s) => s.prompt([eventBlock("frank", "#permission #final-only")], { askOwner }));

  it("allow picks the allow_once option by kind", async () => {
    assert.match((await ask(policyPool("allow"))).finalText, /permission: allowed \(demo-yes\)/);
  });

  it("deny picks the reject_once option by kind", async () => {
    assert.match((await ask(policyPool("deny"))).finalText, /permission: denied \(demo-no\)/);
  });

  describe("ask-owner", () => {
    let owner: AgentPool;
    it("asks and follows a yes (the idle timeout waits for the owner)", async () => {
      owner = policyPool("ask-owner", 2_500);
      const questions: string[] = [];
      const r = await ask(owner, async (req) => {
        questions.push(req.toolCall.title ?? "");
        await sleep(1_800); // longer than idle_timeout
        return true;
      });
      assert.deepEqual(questions, ["demo: touch a file"]);
      assert.match(r.finalText, /permission: allowed \(demo-yes\)/);
      assert.equal(r.timedOut, undefined);
    });

    it("a no denies", async () => {
      assert.match((await ask(owner, async () => false)).finalText, /permission: denied \(demo-no\)/);
    });

    it("no answer within permission_timeout denies", async () => {
      assert.match((await ask(owner, () => new Promise<boolean>(() => {}))).finalText, /permission: denied \(demo-no\)/);
    });

    it("!cancel while the owner is being asked answers the request with cancelled", async () => {
      let askSignal: AbortSignal | undefined;
      const r = await ask(owner, (_req, signal) => {
        askSignal = signal;
        setTimeout(() => owner.cancel("perm"), 100);
        return new Promise<boolean>(() => {});
      });
      assert.equal(r.stopReason, "cancelled");
      assert.equal(r.cancelledBy, "owner");
      assert.equal(askSignal?.aborted, true, "the question to the owner is withdrawn");
    });
  });
});

describe("session set-up", () => {
  it("standing context goes in systemPrompt (append) when the agent advertises it", async () => {
    const p = pool({ env: { DEMO_AGENT_SYSTEM_PROMPT: "1" } });
    const s = await p.acquire("sys", { channel: { id: "general", name: "general" }, mcpEnv: {}, standingContext: STANDING });
    assert.equal(s.standingContextVia, "system_prompt");
    assert.equal(s.standingContextPending, false);
    const blocks = [eventBlock("gina", "#sysprompt #final-only")];
    assert.deepEqual(s.withStandingContext(blocks), blocks);
    const r = await s.prompt(blocks);
    assert.match(r.finalText, /systemPrompt: yes \(mode append/);
    assert.match(r.finalText, /Team instructions: present \("Never merge/);
  });

  it("without the capability the agent gets no systemPrompt and the context travels in the first prompt", async () => {
    const p = pool();
    const s = await p.acquire("nosys", { channel: { id: "general", name: "general" }, mcpEnv: {}, standingContext: STANDING });
    const r = await s.prompt(s.withStandingContext([eventBlock("gina", "#sysprompt #final-only")]));
    assert.match(r.finalText, /systemPrompt: no/);
    assert.match(r.finalText, /Channel: release-room/);
  });

  it("a previous session is resumed when the agent supports it; a refused resume falls back to a new session", async () => {
    const p = pool({ env: { DEMO_AGENT_RESUME: "1" } });
    const s = await p.acquire("resume", {
      channel: { id: "general", name: "general" },
      mcpEnv: {},
      standingContext: STANDING,
      previousSessionId: "sess-before-restart",
    });
    assert.deepEqual([s.sessionId, s.resumed, s.standingContextVia], ["sess-before-restart", true, "none"]);
    const fresh = await p.acquire("resume-gone", {
      channel: { id: "general", name: "general" },
      mcpEnv: {},
      standingContext: STANDING,
      previousSessionId: "gone-1",
    });
    assert.equal(fresh.resumed, false);
    assert.notEqual(fresh.sessionId, "gone-1");
    assert.equal(fresh.standingContextPending, true);
  });

  it("agent.mode is selected; a mode the agent lacks is a clear error", async () => {
    const ok = pool({ mode: "bypassPermissions" });
    await ok.acquire("mode", { channel: { id: "general", name: "general" }, mcpEnv: {} });
    const bad = pool({ mode: "yolo" });
    await assert.rejects(
      bad.acquire("mode", { channel: { id: "general", name: "general" }, mcpEnv: {} }),
      (e: unknown) => e instanceof AgentModeError && /'yolo' is not offered/.test(e.message),
    );
  });

  it("the bridge's secret key never reaches the agent's environment", async () => {
    const secret = generateSecretKey();
    const nsec = nip19.nsecEncode(secret);
    const hex = bytesToHex(secret);
    const p = pool({
      secret,
      env: { LEAKY: `key=${hex}`, FINE: "1" },
      parentEnv: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        BUZZ_PRIVATE_KEY: nsec,
        NOSTR_PRIVATE_KEY: hex,
        XDG_SECRET: nsec,
        XDG_OK: "x",
        OTHER: "y",
      },
      hooksAgentEnforced: true,
    });
    const s = await p.acquire("env", { channel: { id: "general", name: "general" }, mcpEnv: {} });
    const r = await s.prompt([eventBlock("hank", "#env #final-only")]);
    const names = /env names: (.*)/.exec(r.finalText)![1]!.split(",");
    for (const n of ["BUZZ_PRIVATE_KEY", "NOSTR_PRIVATE_KEY", "XDG_SECRET", "LEAKY", "OTHER"]) assert.ok(!names.includes(n), `${n} leaked`);
    for (const n of ["PATH", "HOME", "XDG_OK", "FINE", "BUZZ_AGENT_REQUIRE_REPLY", "MCP_HOOK_SERVERS"])
      assert.ok(names.includes(n), `${n} missing`);
    assert.match(r.finalText, /env secret-like value: no/);
  });
});
