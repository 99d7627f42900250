/**
 * `_PostCompact` in bridge mode: when the agent reports a completed compaction, the bridge
 * asks the proxy for the merged `_PostCompact` and puts it at the start of the scope's next
 * prompt, once. The demo agent's `#compact` reports a compaction; `#first-block` reports
 * the start of the first block it was given.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { World, type DaemonProc } from "../kit/world.js";
import { gateServer } from "./fixtures/gates-helpers.js";

let w: World;
let d: DaemonProc;

before(async () => {
  w = await World.create({ channelName: "memo-room" });
  d = await w.startDaemon({
    mcp: { servers: { memo: gateServer({ GATE_POSTCOMPACT_TEXT: "Remember: the release branch is frozen." }) } },
    gates: { enforce: "bridge" },
  });
});
after(() => w.close());

test("after a compaction the merged _PostCompact text opens the next prompt of the session, once", async () => {
  const ev = await w.owner.post("@agent #compact summarise the plan");
  const reply = await w.waitReply(ev);
  assert.match(reply.content, /compaction: done/);
  const line = await d.waitLog((l) => l.evt === "turn.post_compact");
  assert.equal(line.verdict, "object", "the gate had something to re-inject");
  await w.waitReaction(ev, "✅");

  const next = await w.owner.post("@agent #first-block what now?", { replyTo: ev });
  const answer = await w.waitReply(next);
  const first = /first block: (".*")/.exec(answer.content);
  assert.ok(first, `the demo agent reported its first block: ${answer.content}`);
  const text = JSON.parse(first[1]!) as string;
  assert.match(text, /^Context restored after compaction \(merged _PostCompact\):\n\n\[memo\] Remember: the release branch is frozen\./);
  await w.waitReaction(next, "✅");

  const third = await w.owner.post("@agent #first-block and after that?", { replyTo: ev });
  const again = await w.waitReply(third);
  assert.doesNotMatch(again.content, /Context restored after compaction/, "injected once, not on every prompt");
});
