/**
 * Reliability: an agent that fails part-way through a turn. In channel scope the turn
 * carries a batch (mentions from several threads that arrived while the channel's previous
 * turn ran), and each asker expects the answer in their own thread, so a crash after
 * answering some of them must neither lose the rest nor answer anyone twice; a batch that
 * fails for good gets a failure notice in each unanswered thread. Thread scope (the
 * default, first) runs the same mentions one per turn. Judged by the channel
 * (kit/channel-oracle.ts).
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { World } from "../kit/world.js";
import { ask, assertAnsweredOnce, type Asked } from "../kit/channel-oracle.js";
import { turnsSummary } from "../kit/reliability-helpers.js";
import { sleep } from "../kit/wait.js";

const worlds: World[] = [];
after(async () => {
  for (const w of worlds) await w.close();
});

/** A first mention that keeps the channel busy, then two more that arrive meanwhile (one batch in channel scope). */
async function busyThenTwo(w: World, second: string, third: string, thirdFails = false): Promise<Asked[]> {
  const asked = [await ask(w.owner, "first #slow 4000", { channel: w.channel })];
  // Its turn has started (👀): what follows arrives while it runs, not before.
  await w.waitReaction(asked[0]!.event, "👀", 20_000);
  asked.push(await ask(w.owner, second, { channel: w.channel }));
  // A second later, so the two are ordered by created_at (seconds) and the directive-carrying one is last.
  await sleep(1200);
  asked.push(await ask(w.owner, third, { channel: w.channel, fails: thirdFails }));
  return asked;
}

for (const scope of ["thread", "channel"] as const) {
  test(`${scope} scope: the agent crashes right after its first answer of a turn: the retry answers only what is left, each mention once`, {
    timeout: 60_000,
  }, async () => {
    const w = await World.create();
    worlds.push(w);
    // Two attempts: two crashes stay under the crash breaker's threshold (3).
    const d = await w.startDaemon({ agent: { session_scope: scope }, queue: { max_attempts: 2 }, log: { level: "info" } });
    const asked = await busyThenTwo(w, "second", "third #crash-after-reply");
    const v = await assertAnsweredOnce(w, asked, { timeoutMs: 40_000, diagnose: () => turnsSummary(w) });
    assert.equal(v.notices, 0, "no failure notice: every mention got its answer");
    assert.ok(
      d.logs.some((l) => l.evt === "agent.crash"),
      "the agent really crashed",
    );
    await d.stop();
  });

  test(`${scope} scope: a turn that fails for good: a failure notice in each thread it leaves unanswered, nothing twice`, {
    timeout: 60_000,
  }, async () => {
    const w = await World.create();
    worlds.push(w);
    const d = await w.startDaemon({ agent: { session_scope: scope }, queue: { max_attempts: 1 }, log: { level: "info" } });
    // Channel scope: "second" shares the crashing turn and is reported with it; thread scope: it is answered.
    const asked = await busyThenTwo(w, "second", "third #crash", true);
    if (scope === "channel") asked[1]!.fails = true;
    const v = await assertAnsweredOnce(w, asked, { timeoutMs: 40_000, diagnose: () => turnsSummary(w) });
    assert.equal(v.notices, scope === "channel" ? 2 : 1, "one notice per unanswered thread, counted exactly");
    await d.stop();
  });
}
