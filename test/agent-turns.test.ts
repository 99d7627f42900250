// Turns with the real demo agent over stdio: replies through the MCP tool (directly and
// through the real mcp-proxy), fallback text, update order, directives, !cancel.
import { before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { channelDirName, type AgentPool } from "../src/agent/index.js";
import { CLI, FIXTURES, STANDING, eventBlock, poolFixture } from "./fixtures/agent-helpers.js";
import { sleep } from "../kit/wait.js";

const { tmp, pool } = poolFixture();

let logN = 0;
const sendLog = () => join(tmp.dir, `send-${++logN}.jsonl`);
const sent = (file: string): Array<{ content: string }> =>
  existsSync(file)
    ? readFileSync(file, "utf8")
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

describe("agent turns with the demo agent", () => {
  let shared: AgentPool;
  // One session serves the directive tests in turn, as a scope's session serves its mentions.
  const directivesLog = sendLog();
  const directives = () =>
    shared.acquire("directives", {
      channel: { id: "general", name: "general" },
      mcpEnv: { ECHO_SEND_LOG: directivesLog, ECHO_SEND_STOP_TEXT: "CI is red" },
    });
  before(() => {
    shared = pool();
  });

  it("replies through the send_message tool with a summary of the context it got", async () => {
    const log = sendLog();
    const s = await shared.acquire("reply-tool", {
      channel: { id: "Release Room", name: "Release Room" },
      mcpEnv: { ECHO_SEND_LOG: log },
      standingContext: STANDING,
    });
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
    // The cwd template got the channel's directory name: its slug, then a hash of its id.
    const dirName = channelDirName({ id: "Release Room", name: "Release Room" });
    assert.match(dirName, /^release-room-[0-9a-f]{16}$/);
    assert.ok(existsSync(join(tmp.dir, "work", dirName)));
  });

  it("reuses the scope's session and sends the standing context only once", async () => {
    const s = await shared.acquire("reply-tool", {
      channel: { id: "Release Room", name: "Release Room" },
      mcpEnv: {},
      standingContext: STANDING,
    });
    assert.equal(s.standingContextPending, false);
    assert.equal(s.turns, 1);
  });

  it("through the real mcp-proxy with a manifest: the reply still goes out via send_message", async () => {
    const log = sendLog();
    const manifest = join(tmp.dir, "manifest.yaml");
    writeFileSync(
      manifest,
      [
        "servers:",
        "  echo:",
        `    command: ${JSON.stringify(process.execPath)}`,
        `    args: [${JSON.stringify(join(FIXTURES, "echo-send.mjs"))}]`,
        `    env: { ECHO_SEND_LOG: ${JSON.stringify(log)} }`,
        "    prefix: false",
      ].join("\n"),
    );
    const p = pool({ proxy: { command: process.execPath, args: [CLI, "mcp-proxy", "--manifest", manifest] } });
    const s = await p.acquire("via-proxy", { channel: { id: "general", name: "general" }, mcpEnv: {}, standingContext: STANDING });
    const r = await s.prompt(s.withStandingContext([eventBlock("bob", "hello through the proxy")]));
    assert.equal(r.stopReason, "end_turn");
    assert.equal(sent(log).length, 1);
    assert.match(sent(log)[0]!.content, /Asked: hello through the proxy/);
  });

  it("falls back to final text when told to (#final-only), publishing nothing", async () => {
    const s = await directives();
    const r = await s.prompt([eventBlock("carol", "just say it #final-only")]);
    assert.equal(r.stopReason, "end_turn");
    assert.equal(r.toolCalls, 0);
    assert.equal(sent(directivesLog).length, 0);
    assert.match(r.finalText, /^Demo agent here, no LLM/);
    assert.match(r.finalText, /Asked by: carol/);
  });

  it("hands updates to onUpdate one at a time, in arrival order, even when it is slow", async () => {
    const s = await directives();
    const order: string[] = [];
    let inside = 0;
    const r = await s.prompt([eventBlock("carol", "#compact #stop-hook #final-only")], {
      onUpdate: async (u) => {
        assert.equal(++inside, 1, "onUpdate ran concurrently");
        await sleep(20 + Math.random() * 30); // a slow handler: the next update must wait for this one
        order.push(u.sessionUpdate === "compaction_update" ? `compaction:${u.status}` : u.sessionUpdate);
        inside--;
      },
    });
    assert.equal(r.stopReason, "end_turn");
    assert.deepEqual(order, ["compaction:in_progress", "compaction:completed", "tool_call", "tool_call_update", "agent_message_chunk"]);
  });

  it("#silent ends the turn with no text and no tool call", async () => {
    const s = await directives();
    const r = await s.prompt([eventBlock("carol", "#silent")]);
    assert.deepEqual([r.stopReason, r.finalText, r.toolCalls], ["end_turn", "", 0]);
  });

  it("#compact is reported as a compaction", async () => {
    const s = await directives();
    const r = await s.prompt([eventBlock("carol", "#compact #final-only")]);
    assert.equal(r.compacted, true);
  });

  it("#tool calls a named MCP tool and reports its answer", async () => {
    const s = await directives();
    const r = await s.prompt([eventBlock("carol", "#stop-hook #final-only")]);
    assert.match(r.finalText, /_Stop: "CI is red"/);
  });

  it("!cancel stops a hanging turn (the agent honours session/cancel)", async () => {
    const s = await directives();
    let cancelled = false;
    const r = await s.prompt([eventBlock("dave", "#hang")], {
      onUpdate: () => {
        if (!cancelled) cancelled = shared.cancel("directives");
      },
    });
    assert.equal(cancelled, true);
    assert.equal(r.stopReason, "cancelled");
    assert.equal(r.cancelledBy, "owner");
    assert.equal(r.killed, false);
    assert.equal(s.alive, true, "an agent that honours cancel keeps its session");
  });

  it("!cancel right behind the prompt, before the agent's first word, stops the turn the same way", async () => {
    // The moment the mid-turn tests act at: the cancel reaches a new session's agent while it
    // is still sending its first update (and starting its MCP servers).
    const s = await shared.acquire("cancel-early", { channel: { id: "general", name: "general" }, mcpEnv: {} });
    const turn = s.prompt([eventBlock("dave", "#hang")]);
    assert.equal(shared.cancel("cancel-early"), true);
    const r = await turn;
    assert.equal(r.stopReason, "cancelled");
    assert.equal(r.killed, false, "the agent stopped by itself, not after cancel_grace");
    assert.equal(s.alive, true);
  });
});
