/**
 * Reliability: the daemon is SIGKILLed at seeded-random moments while the owner and a
 * teammate post mentions, and restarted each time on the same state directory. No
 * graceful shutdown, so whatever was in flight (a turn half done, a reply published but
 * not yet recorded, events not yet stored) must be recovered from the SQLite store and
 * the relay: every mention answered exactly once as the channel shows it (see
 * kit/channel-oracle.ts). Both session scopes; thread (the default) first.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { World, type DaemonProc } from "../kit/world.js";
import { ask, assertAnsweredOnce, type Asked } from "../kit/channel-oracle.js";
import { seededRng } from "./fixtures/seeded.js";
import { leakedSecrets, turnsSummary } from "../kit/reliability-helpers.js";
import { sleep } from "../kit/wait.js";

const CHANNELS = 3;
const MENTIONS = Number(process.env.RELIABILITY_MENTIONS ?? 36);
const KILLS = 2;
const worlds: World[] = [];
after(async () => {
  for (const w of worlds) await w.close();
});

for (const scope of ["thread", "channel"] as const) {
  test(`${scope} scope: ${MENTIONS} mentions with the daemon SIGKILLed ${KILLS} times and restarted: each answered exactly once in its own thread`, {
    // Safety nets, not targets (the answers are awaited on evidence): idle, a slow two-core
    // machine takes about 95 s for the thread-scope run.
    timeout: 240_000,
  }, async () => {
    const rng = seededRng(`restarts/${scope}`);
    const w = await World.create({ channelName: "room-0" });
    worlds.push(w);
    const channels = [w.channel];
    for (let i = 1; i < CHANNELS; i++) channels.push(await w.addChannel({ name: `room-${i}` }));
    const daemons: DaemonProc[] = [
      await w.startDaemon({
        agent: { max_concurrent: 3, session_scope: scope },
        defaults: { respond_to: "allowlist", allow: [w.teammate.npub] },
        log: { level: "info" },
      }),
    ];
    const configFile = daemons[0]!.configFile;
    // KILLS distinct indices at least 10 apart, so each restart has finished before the next kill.
    const kills: number[] = [];
    while (kills.length < KILLS) {
      const p = rng.int(6, MENTIONS - 4);
      if (kills.every((k) => Math.abs(k - p) >= 10)) kills.push(p);
    }
    kills.sort((a, b) => a - b);

    const asked: Asked[] = [];
    let restarting: Promise<void> = Promise.resolve();
    for (let i = 0; i < MENTIONS; i++) {
      if (kills.includes(i)) {
        await restarting;
        const victim = daemons[daemons.length - 1]!;
        victim.proc.kill("SIGKILL");
        restarting = (async () => {
          await victim.exited;
          daemons.push(await w.startDaemon({}, { configFile }));
        })();
      }
      // Two posters, each well under the relay's per-connection frame quota.
      asked.push(await ask(i % 2 ? w.teammate : w.owner, `ping m${i}`, { channel: channels[i % CHANNELS]! }));
      await sleep(60 + rng.int(0, 120)); // paced posting
    }
    await restarting;
    assert.equal(daemons.length, KILLS + 1, `killed at mentions ${kills.join(", ")}`);

    const v = await assertAnsweredOnce(w, asked, { timeoutMs: 150_000, diagnose: () => turnsSummary(w) });
    assert.equal(v.notices, 0, "a restart is not an agent failure: no failure notices");
    const raw = daemons.map((d) => d.raw()).join("\n");
    assert.deepEqual(leakedSecrets(raw, [w.agent, w.owner, w.teammate, w.stranger]), [], "no secret in any daemon's output");
    for (const d of daemons) await d.stop();
  });
}
