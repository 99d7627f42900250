/**
 * Reliability (issue 10): the daemon is SIGKILLed 3 times at random moments while the
 * owner posts 100 mentions, and restarted each time on the same state directory. No
 * graceful shutdown, so whatever was in flight (a turn half done, a reply published but
 * not yet recorded, events not yet stored) must be recovered from the SQLite store and
 * the relay's replay: every mention answered exactly once, no duplicate replies.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import { World, type DaemonProc } from "./fixtures/world.js";
import { assertCoveredOnce, leakedSecrets } from "./reliability-helpers.js";

const CHANNELS = 4;
const MENTIONS = 100;
const KILLS = 3;

let w: World;
let channels: string[];
const daemons: DaemonProc[] = [];

before(async () => {
  w = await World.create({ channelName: "room-0" });
  channels = [w.channel];
  for (let i = 1; i < CHANNELS; i++) channels.push(await w.addChannel({ name: `room-${i}` }));
  daemons.push(await w.startDaemon({ agent: { max_concurrent: 4, session_scope: "channel" }, log: { level: "info" } }));
});
after(() => w.close());

/** KILLS distinct indices in [10, MENTIONS - 10), at least 15 apart, so each restart has finished before the next kill. */
function killPoints(): number[] {
  for (;;) {
    const pts = Array.from({ length: KILLS }, () => 10 + Math.floor(Math.random() * (MENTIONS - 20))).sort((a, b) => a - b);
    if (pts.every((p, i) => i === 0 || p - pts[i - 1]! >= 15)) return pts;
  }
}

test(`${MENTIONS} mentions with the daemon SIGKILLed ${KILLS} times and restarted: each answered exactly once`, { timeout: 85_000 }, async () => {
  const configFile = daemons[0]!.configFile;
  const kills = killPoints();
  const mentions: Event[] = [];
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
    mentions.push(await w.owner.post(`@agent ping m${i}`, { channel: channels[i % CHANNELS] }));
    await new Promise((r) => setTimeout(r, Math.random() * 80));
  }
  await restarting;
  assert.equal(daemons.length, KILLS + 1, `killed at mentions ${kills.join(", ")}`);

  await assertCoveredOnce(w, channels, mentions, 60_000);
  await new Promise((r) => setTimeout(r, 2000));
  const { notices, turns } = await assertCoveredOnce(w, channels, mentions, 5_000);
  if (process.env.RELIABILITY_DEBUG) {
    const evts = daemons.flatMap((d) => d.logs.map((l) => String(l.evt))).filter((e) => /recovered|already_answered|interrupted|turn_retry|turn.end/.test(e));
    console.log({ kills, turns, evts: evts.reduce<Record<string, number>>((a, e) => ((a[e] = (a[e] ?? 0) + 1), a), {}) });
  }
  assert.equal(notices, 0, "a restart is not an agent failure");
  const raw = daemons.map((d) => d.raw()).join("\n");
  assert.deepEqual(leakedSecrets(raw, [w.agent, w.owner, w.teammate, w.stranger]), [], "no secret in any daemon's output");
});
