/**
 * Reliability, aimed at the window where replies get doubled or lost: the relay has
 * stored the bridge's reply but the bridge has not recorded it. Armed through the
 * test-only BUZZ_BRIDGE_FAULT variable (src/relay/faults.ts):
 *
 * - kill-after-reply-ok: the daemon is SIGKILLed the moment the relay's OK for its second
 *   message arrives; restarted (unarmed) on the same state, it must neither answer that
 *   mention again nor leave any mention unanswered;
 * - swallow-reply-ok: the OK for its second message never reaches it; the publish times
 *   out and is retried (the relay says duplicate) — still one answer per mention.
 *
 * In both session scopes (thread first). In channel scope the mentions after the first
 * are batched into one turn, so the kill lands between two answers of the same turn.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { World } from "../kit/world.js";
import { ask, assertAnsweredOnce, type Asked } from "../kit/channel-oracle.js";
import { turnsSummary } from "../kit/reliability-helpers.js";

const worlds: World[] = [];
after(async () => {
  for (const w of worlds) await w.close();
});

async function setup(scope: "thread" | "channel", fault: string) {
  const w = await World.create();
  worlds.push(w);
  const d = await w.startDaemon(
    { agent: { max_concurrent: 2, session_scope: scope }, log: { level: "info" } },
    { env: { BUZZ_BRIDGE_FAULT: fault } },
  );
  return { w, d };
}

/** Three mentions; the 2nd and 3rd arrive while the 1st is answered (in channel scope: one batch). */
async function threeMentions(w: World): Promise<Asked[]> {
  const asked = [await ask(w.owner, "first #slow 400", { channel: w.channel })];
  // The later mentions come once the first's turn has begun (👀), while it is answered.
  await w.waitReaction(asked[0]!.event, "👀", 20_000);
  for (const t of ["second", "third"]) asked.push(await ask(w.owner, t, { channel: w.channel }));
  return asked;
}

for (const scope of ["thread", "channel"] as const) {
  test(`${scope} scope: killed right after the relay's OK for a reply, before recording it: after a restart each mention is answered exactly once`, {
    timeout: 60_000,
  }, async () => {
    const { w, d } = await setup(scope, "kill-after-reply-ok:2");
    const asked = await threeMentions(w);
    await d.exited;
    assert.equal(d.proc.signalCode, "SIGKILL", "the fault point fired: the daemon died by SIGKILL");
    const again = await w.startDaemon({}, { configFile: d.configFile });
    asked.push(await ask(w.owner, "after the restart", { channel: w.channel }));
    const v = await assertAnsweredOnce(w, asked, { timeoutMs: 40_000, diagnose: () => turnsSummary(w) });
    assert.equal(v.notices, 0, "no failure notices");
    await again.stop();
  });

  test(`${scope} scope: the relay's OK for a reply is lost: the publish is retried and each mention is answered exactly once`, {
    timeout: 60_000,
  }, async () => {
    const { w, d } = await setup(scope, "swallow-reply-ok:2");
    const asked = await threeMentions(w);
    // The relay stored the reply at once; the bridge learns it only when its OK wait ends.
    await d.waitLog((l) => l.evt === "relay.publish_retry" && l.status === "timeout", 30_000);
    // Every turn has ended: the turns that ended published one answer per mention between them
    // (however the mentions were batched).
    const answered = () => d.logs.filter((x) => x.evt === "turn.end").reduce((n, x) => n + Number(x.published ?? 0), 0);
    await d.waitLog(() => answered() >= asked.length, 30_000);
    const v = await assertAnsweredOnce(w, asked, { timeoutMs: 45_000, diagnose: () => turnsSummary(w) });
    assert.equal(v.notices, 0, "no failure notices");
    // (Retries for other reasons, e.g. the relay's rate limit, are not this fault's doing.)
    const retried = d.logs.filter((l) => l.evt === "relay.publish_retry" && l.status === "timeout");
    assert.equal(
      retried.length,
      1,
      `exactly one publish waited out its lost OK and was sent again: ${JSON.stringify(d.logs.filter((l) => l.evt === "relay.publish_retry"))}`,
    );
    assert.equal(d.proc.exitCode, null, "the daemon kept running");
    await d.stop();
  });
}

test("an unknown BUZZ_BRIDGE_FAULT entry stops the daemon at start with an error naming it", { timeout: 30_000 }, async () => {
  const w = await World.create();
  worlds.push(w);
  const d = await w.startDaemon({}, { env: { BUZZ_BRIDGE_FAULT: "kill-after-reply:2" }, waitStarted: false });
  assert.equal(await d.exited, 2);
  assert.match(d.raw(), /BUZZ_BRIDGE_FAULT: 'kill-after-reply:2' is not a fault point; use kill-after-reply-ok:N or swallow-reply-ok:N/);
});
