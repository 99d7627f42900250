// Turns with the real demo agent over stdio: replies through the MCP tool, fallback text,
// timeouts, cancel, permissions, the standing-context paths and the agent's environment.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { nip19, generateSecretKey } from "nostr-tools";
import { bytesToHex } from "nostr-tools/utils";
import type { AgentPool, AskOwner } from "../src/agent/index.js";
import { AgentModeError } from "../src/agent/index.js";
import { CLI, FIXTURES, STANDING, demoPool, eventBlock, tempDir } from "./fixtures/agent-helpers.js";

const tmp = tempDir();
const pools: AgentPool[] = [];
const pool = (over: Parameters<typeof demoPool>[1] = {}) => {
  const p = demoPool(tmp.dir, over);
  pools.push(p);
  return p;
};
after(async () => {
  await Promise.all(pools.map((p) => p.close()));
  tmp.cleanup();
});

let logN = 0;
const sendLog = () => join(tmp.dir, `send-${++logN}.jsonl`);
const sent = (file: string): Array<{ content: string }> =>
  existsSync(file) ? readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [];

describe("agent turns with the demo agent", () => {
  let shared: AgentPool;
  before(() => {
    shared = pool();
  });

  it("replies through the send_message tool with a summary of the context it got", async () => {
    const log = sendLog();
    const s = await shared.acquire("reply-tool", { channelName: "Release Room", mcpEnv: { ECHO_SEND_LOG: log }, standingContext: STANDING });
    assert.equal(s.standingContextVia, "prompt");
    const seen: string[] = [];
    const r = await s.prompt(s.withStandingContext([eventBlock("alice (npub1alice)", "can you check the build?")]), {
      onUpdate: (u) => void seen.push(u.sessionUpdate),
    });
    assert.equal(r.stopReason, "end_turn");
    assert.equal(r.toolCalls, 1);
    const posts = sent(log);
    assert.equal(posts.length, 1);
    assert.match(posts[0]!.content, /Channel: release-room — Where we ship releases/);
    assert.match(posts[0]!.content, /Team instructions: present \("Never merge without a green CI run\."\)/);
    assert.match(posts[0]!.content, /Asked by: alice \(npub1alice\)/);
    assert.match(posts[0]!.content, /Asked: can you check the build\?/);
    assert.deepEqual(seen.slice(0, 2), ["tool_call", "tool_call_update"]);
    assert.match(r.finalText, /Replied in the thread \(published evt-1\)/);
    // The cwd template got the channel's slug.
    assert.ok(existsSync(join(tmp.dir, "work/release-room")));
  });

  it("reuses the scope's session and sends the standing context only once", async () => {
    const s = await shared.acquire("reply-tool", { channelName: "Release Room", mcpEnv: {}, standingContext: STANDING });
    assert.equal(s.standingContextPending, false);
    assert.equal(s.turns, 1);
  });

  it("through the real mcp-proxy with a manifest: the reply still goes out via send_message", async () => {
    const log = sendLog();
    const manifest = join(tmp.dir, "manifest.yaml");
    writeFileSync(manifest, [
      "servers:",
      "  echo:",
      `    command: ${JSON.stringify(process.execPath)}`,
      `    args: [${JSON.stringify(join(FIXTURES, "echo-send.mjs"))}]`,
      `    env: { ECHO_SEND_LOG: ${JSON.stringify(log)} }`,
      "    prefix: false",
    ].join("\n"));
    const p = pool({ proxy: { command: process.execPath, args: [CLI, "mcp-proxy", "--manifest", manifest] } });
    const s = await p.acquire("via-proxy", { channelName: "general", mcpEnv: {}, standingContext: STANDING });
    const r = await s.prompt(s.withStandingContext([eventBlock("bob", "hello through the proxy")]));
    assert.equal(r.stopReason, "end_turn");
    assert.equal(sent(log).length, 1);
    assert.match(sent(log)[0]!.content, /Asked: hello through the proxy/);
  });

  it("falls back to final text when told to (#final-only), publishing nothing", async () => {
    const log = sendLog();
    const s = await shared.acquire("final-only", { channelName: "general", mcpEnv: { ECHO_SEND_LOG: log } });
    const r = await s.prompt([eventBlock("carol", "just say it #final-only")]);
    assert.equal(r.stopReason, "end_turn");
    assert.equal(r.toolCalls, 0);
    assert.equal(sent(log).length, 0);
    assert.match(r.finalText, /^Demo agent here, no LLM/);
    assert.match(r.finalText, /Asked by: carol/);
  });

  it("#silent ends the turn with no text and no tool call", async () => {
    const s = await shared.acquire("silent", { channelName: "general", mcpEnv: {} });
    const r = await s.prompt([eventBlock("carol", "#silent")]);
    assert.deepEqual([r.stopReason, r.finalText, r.toolCalls], ["end_turn", "", 0]);
  });

  it("#compact is reported as a compaction", async () => {
    const s = await shared.acquire("compact", { channelName: "general", mcpEnv: {} });
    const r = await s.prompt([eventBlock("carol", "#compact #final-only")]);
    assert.equal(r.compacted, true);
  });

  it("#tool calls a named MCP tool and reports its answer", async () => {
    const s = await shared.acquire("tool", { channelName: "general", mcpEnv: { ECHO_SEND_STOP_TEXT: "CI is red" } });
    const r = await s.prompt([eventBlock("carol", "#stop-hook #final-only")]);
    assert.match(r.finalText, /_Stop: "CI is red"/);
  });

  it("!cancel stops a hanging turn (the agent honours session/cancel)", async () => {
    const s = await shared.acquire("owner-cancel", { channelName: "general", mcpEnv: {} });
    const turn = s.prompt([eventBlock("dave", "#hang")]);
    setTimeout(() => assert.equal(shared.cancel("owner-cancel"), true), 300);
    const r = await turn;
    assert.equal(r.stopReason, "cancelled");
    assert.equal(r.cancelledBy, "owner");
    assert.equal(r.killed, false);
    assert.equal(s.alive, true, "an agent that honours cancel keeps its session");
  });
});

describe("timeouts", () => {
  it("a hanging agent hits idle_timeout and is cancelled", async () => {
    const p = pool({ idleTimeoutMs: 400 });
    const s = await p.acquire("hang", { channelName: "general", mcpEnv: {} });
    const r = await s.prompt([eventBlock("erin", "#hang")]);
    assert.equal(r.stopReason, "cancelled");
    assert.equal(r.timedOut, "idle");
    assert.equal(r.killed, false);
  });

  it("max_turn bounds a slow turn", async () => {
    const p = pool({ maxTurnMs: 400 });
    const s = await p.acquire("slow", { channelName: "general", mcpEnv: {} });
    const r = await s.prompt([eventBlock("erin", "#slow 20000")]);
    assert.equal(r.stopReason, "cancelled");
    assert.equal(r.timedOut, "max_turn");
  });

  it("an agent ignoring session/cancel is killed after cancel_grace; the scope gets a new process", async () => {
    const p = pool({ idleTimeoutMs: 300, cancelGraceMs: 300 });
    const s = await p.acquire("ignore", { channelName: "general", mcpEnv: {} });
    const crashes: unknown[] = [];
    p.on("crash", (c) => crashes.push(c));
    const r = await s.prompt([eventBlock("erin", "#ignore-cancel")]);
    assert.deepEqual([r.stopReason, r.timedOut, r.killed], ["cancelled", "idle", true]);
    assert.equal(s.alive, false);
    const again = await p.acquire("ignore", { channelName: "general", mcpEnv: {} });
    assert.notEqual(again.proc.pid, s.proc.pid);
    assert.equal((await again.prompt([eventBlock("erin", "#final-only hi")])).stopReason, "end_turn");
    assert.equal(crashes.length, 0, "a kill by the bridge is not a crash");
  });
});

describe("permissions", () => {
  const ask = async (policy: "allow" | "deny" | "ask-owner", askOwner?: AskOwner, permissionTimeoutMs = 5_000) => {
    const p = pool({ permissions: policy, permissionTimeoutMs, idleTimeoutMs: 300 });
    const s = await p.acquire(`perm-${policy}`, { channelName: "general", mcpEnv: {} });
    return s.prompt([eventBlock("frank", "#permission #final-only")], { askOwner });
  };

  it("allow picks the allow_once option by kind", async () => {
    assert.match((await ask("allow")).finalText, /permission: allowed \(demo-yes\)/);
  });

  it("deny picks the reject_once option by kind", async () => {
    assert.match((await ask("deny")).finalText, /permission: denied \(demo-no\)/);
  });

  it("ask-owner asks and follows a yes (the idle timeout waits for the owner)", async () => {
    const questions: string[] = [];
    const r = await ask("ask-owner", async (req) => {
      questions.push(req.toolCall.title ?? "");
      await new Promise((res) => setTimeout(res, 600)); // longer than idle_timeout
      return true;
    });
    assert.deepEqual(questions, ["demo: touch a file"]);
    assert.match(r.finalText, /permission: allowed \(demo-yes\)/);
    assert.equal(r.timedOut, undefined);
  });

  it("ask-owner: a no denies", async () => {
    assert.match((await ask("ask-owner", async () => false)).finalText, /permission: denied \(demo-no\)/);
  });

  it("ask-owner: no answer within permission_timeout denies", async () => {
    const r = await ask("ask-owner", () => new Promise<boolean>(() => {}), 300);
    assert.match(r.finalText, /permission: denied \(demo-no\)/);
  });
});

describe("session set-up", () => {
  it("standing context goes in systemPrompt (append) when the agent advertises it", async () => {
    const p = pool({ env: { DEMO_AGENT_SYSTEM_PROMPT: "1" } });
    const s = await p.acquire("sys", { channelName: "general", mcpEnv: {}, standingContext: STANDING });
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
    const s = await p.acquire("nosys", { channelName: "general", mcpEnv: {}, standingContext: STANDING });
    const r = await s.prompt(s.withStandingContext([eventBlock("gina", "#sysprompt #final-only")]));
    assert.match(r.finalText, /systemPrompt: no/);
    assert.match(r.finalText, /Channel: release-room/);
  });

  it("agent.mode is selected; a mode the agent lacks is a clear error", async () => {
    const ok = pool({ mode: "bypassPermissions" });
    await ok.acquire("mode", { channelName: "general", mcpEnv: {} });
    const bad = pool({ mode: "yolo" });
    await assert.rejects(bad.acquire("mode", { channelName: "general", mcpEnv: {} }), (e: unknown) =>
      e instanceof AgentModeError && /'yolo' is not offered/.test(e.message));
  });

  it("the bridge's secret key never reaches the agent's environment", async () => {
    const secret = generateSecretKey();
    const nsec = nip19.nsecEncode(secret);
    const hex = bytesToHex(secret);
    const p = pool({
      secret,
      env: { LEAKY: `key=${hex}`, FINE: "1" },
      parentEnv: { PATH: process.env.PATH, HOME: process.env.HOME, BUZZ_PRIVATE_KEY: nsec, NOSTR_PRIVATE_KEY: hex, XDG_SECRET: nsec, XDG_OK: "x", OTHER: "y" },
      hooksAgentEnforced: true,
    });
    const s = await p.acquire("env", { channelName: "general", mcpEnv: {} });
    const r = await s.prompt([eventBlock("hank", "#env #final-only")]);
    const names = /env names: (.*)/.exec(r.finalText)![1]!.split(",");
    for (const n of ["BUZZ_PRIVATE_KEY", "NOSTR_PRIVATE_KEY", "XDG_SECRET", "LEAKY", "OTHER"]) assert.ok(!names.includes(n), `${n} leaked`);
    for (const n of ["PATH", "HOME", "XDG_OK", "FINE", "BUZZ_AGENT_REQUIRE_REPLY", "MCP_HOOK_SERVERS"]) assert.ok(names.includes(n), `${n} missing`);
    assert.match(r.finalText, /env secret-like value: no/);
  });
});
