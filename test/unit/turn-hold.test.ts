/**
 * `hold_replies` inside one turn (src/turn/run.ts with src/turn/held-posts.ts): held posts go
 * out in order only once the `stop: wait` gate allows; a wait given up, or a turn that stopped
 * without asking the gate, posts none of them and says so in its one notice. The agent, gate
 * and publisher are small in-process implementations of the turn's ports.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { finalizeEvent, generateSecretKey, type Event, type EventTemplate } from "nostr-tools";
import { runTurn, type TurnPorts, type TurnSpec } from "../../src/turn/run.js";
import { HeldPosts } from "../../src/turn/held-posts.js";
import type { AgentTurnResult, HookFanout } from "../../src/turn/ports.js";
import { message, threadRootOf } from "../../src/nostr/events.js";
import { silentLogger } from "../../src/base/log.js";
import { KIND } from "../../src/nostr/kinds.js";

const sk = generateSecretKey();
const CHANNEL = "4b1d0c3e-0000-4000-8000-000000000002";
const trigger = finalizeEvent({ kind: 9, created_at: 1000, content: "@agent ship it", tags: [["h", CHANNEL]] }, generateSecretKey());

const spec: TurnSpec = {
  turnId: "1",
  channel: CHANNEL,
  thread: { root: threadRootOf(trigger), parent: trigger.id },
  triggers: [trigger],
  blocks: [{ type: "text", text: "ship it" }],
  replyFallback: "final_text",
  maxReplyBytes: 256 * 1024,
  typing: false,
  enforce: "bridge",
  gates: {
    maxRejections: 2,
    waitPollMs: 5,
    waitMaxMs: 100,
    stopModes: { approval: "wait" },
    waitGates: [{ name: "approval", onError: "object" }],
  },
};

const fan = (verdict: "allow" | "object"): HookFanout => ({
  text: verdict === "object" ? "waiting for a 👍" : "",
  verdict,
  ms: 1,
  servers: [{ name: "approval", ms: 1, verdict, timed_out: false, text: verdict === "object" ? "waiting for a 👍" : "" }],
});

/** A turn whose agent sends `texts` through the held queue, then ends with `stopReason`. */
function world(texts: string[], gate: () => "allow" | "object", stopReason = "end_turn") {
  const published: Event[] = [];
  const held = new HeldPosts(["approval"]);
  const ports: TurnPorts = {
    agent: {
      prompt: async (): Promise<AgentTurnResult> => {
        for (const t of texts)
          held.add(async () => ports.published.add((await ports.out.publish(message(CHANNEL, t, { thread: spec.thread })))!.id));
        return { stopReason, finalText: "done" };
      },
    },
    hooks: { runHook: async () => fan(gate()) },
    out: {
      publish: async (t: EventTemplate) => {
        const ev = finalizeEvent(t, sk);
        // Messages only: the turn's ⏳ and ✅ reactions are published through the same port.
        if (ev.kind === KIND.message) published.push(ev);
        return ev;
      },
      signal: () => {},
    },
    logger: silentLogger(),
    published: new Set(),
    signal: new AbortController().signal,
    held,
  };
  return { ports, published };
}

test("held posts go out in order once the gate allows, and nothing before", async () => {
  let polls = 0;
  let seenWhileWaiting = -1;
  const w = world(["one", "two", "three"], () => {
    polls++;
    if (polls === 2) seenWhileWaiting = w.published.length;
    return polls < 3 ? "object" : "allow";
  });
  // Patience past the third poll on a loaded machine: this wait ends by the gate's allow, not by wait_max.
  const o = await runTurn({ ...spec, gates: { ...spec.gates, waitMaxMs: 60_000 } }, w.ports);
  assert.equal(seenWhileWaiting, 0, "nothing published while the gate objected");
  assert.deepEqual(
    w.published.map((e) => e.content),
    ["one", "two", "three"],
    "all held posts, in order, and no fallback after them",
  );
  assert.equal(o.status, "answered");
  assert.equal(o.status === "answered" && o.via, "tool");
});

test("a wait given up (wait_max) drops the held posts: one notice, saying how many", async () => {
  const w = world(["one", "two"], () => "object");
  await runTurn(spec, w.ports);
  assert.equal(w.published.length, 1, w.published.map((e) => e.content).join(" | "));
  assert.match(w.published[0]!.content, /^Gave up waiting for gate 'approval'/);
  assert.match(
    w.published[0]!.content,
    /The 2 messages the agent wrote in this turn, held for the approval of gate 'approval', were not posted\./,
  );
});

test("a turn that stopped for another reason than end_turn never asked the gate: its held post is dropped, said once", async () => {
  const w = world(["one"], () => "allow", "max_tokens");
  await runTurn(spec, w.ports);
  assert.equal(w.published.length, 1, w.published.map((e) => e.content).join(" | "));
  assert.match(w.published[0]!.content, /^The turn ended \(max_tokens\) before its gates were asked\. The message .* was not posted\./);
});
