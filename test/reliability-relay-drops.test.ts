/**
 * Reliability: the relay drops every connection several times while the owner and a
 * teammate post mentions across several channels; the bridge reconnects, resubscribes
 * with `since` and gets replays. Judged by the channel (kit/channel-oracle.ts):
 * every mention has exactly one agent message in its own thread quoting it, and the
 * agent posted nothing else. Both session scopes, thread (the default) first; in channel
 * scope mentions that arrive while a channel's turn runs are batched into its next turn
 * and still each get their own answer. Per-thread scopes spawn an agent session per
 * mention, so the thread run posts fewer mentions to fit 2 cores.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { World } from "../kit/world.js";
import { ask, assertAnsweredOnce, type Asked } from "../kit/channel-oracle.js";
import { seededRng } from "./fixtures/seeded.js";
import { leakedSecrets, turnsSummary } from "../kit/reliability-helpers.js";
import { sleep } from "../kit/wait.js";

const CHANNELS = 5;
const DROPS = 3;
const COUNT = { thread: Number(process.env.RELIABILITY_MENTIONS ?? 40), channel: Number(process.env.RELIABILITY_MENTIONS ?? 80) };
const worlds: World[] = [];
after(async () => {
  for (const w of worlds) await w.close();
});

for (const scope of ["thread", "channel"] as const) {
  const MENTIONS = COUNT[scope];
  test(`${scope} scope: ${MENTIONS} mentions across ${CHANNELS} channels while the relay drops every connection ${DROPS} times: each answered exactly once in its own thread`, {
    timeout: 120_000,
  }, async () => {
    const rng = seededRng(`relay-drops/${scope}`);
    const w = await World.create({ channelName: "room-0" });
    worlds.push(w);
    const channels = [w.channel];
    for (let i = 1; i < CHANNELS; i++) channels.push(await w.addChannel({ name: `room-${i}` }));
    const d = await w.startDaemon({
      agent: { max_concurrent: 3, session_scope: scope },
      defaults: { respond_to: "allowlist", allow: [w.teammate.npub] },
      log: { level: "info" },
    });
    const started = (await d.waitLog((l) => l.evt === "daemon.started")) as { channels: unknown[] };
    assert.equal(started.channels.length, CHANNELS, "the daemon listens in every channel");

    const asked: Asked[] = [];
    const segment = Math.ceil(MENTIONS / (DROPS + 1));
    let drops = 0;
    let authedAtDrop = 0;
    for (let i = 0; i < MENTIONS; i++) {
      if (i > 0 && i % segment === 0) {
        // Each drop must cut a live connection: wait until the daemon is back from the last
        // one (mentions posted meanwhile reach it only through the resubscribe replay).
        const authCount = () => d.logs.filter((l) => l.evt === "relay.authenticated").length;
        if (drops > 0) await d.waitLog(() => authCount() > authedAtDrop, 30_000);
        authedAtDrop = authCount();
        w.relay.dropAll();
        drops++;
        // The posters reconnect at once (fresh clients) instead of waiting out a backoff; the daemon does not.
        w.owner.stop();
        w.teammate.stop();
      }
      // Two posters at a modest pace: each stays well under the relay's per-connection frame quota.
      asked.push(await ask(i % 2 ? w.teammate : w.owner, `ping m${i}`, { channel: channels[rng.int(0, CHANNELS)]! }));
      await sleep(rng.int(40, 140)); // paced posting
    }
    assert.equal(drops, DROPS);

    const v = await assertAnsweredOnce(w, asked, { timeoutMs: 80_000, diagnose: () => turnsSummary(w) });
    assert.equal(v.notices, 0, "no failure notices: dropped connections are not agent failures");
    assert.ok(d.logs.filter((l) => l.evt === "relay.disconnected").length >= DROPS, "the daemon really lost its connection at every drop");
    assert.deepEqual(leakedSecrets(d.raw(), [w.agent, w.owner, w.teammate, w.stranger]), [], "no secret in the daemon's output");
    await d.stop();
  });
}
