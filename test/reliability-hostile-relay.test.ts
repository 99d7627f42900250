/**
 * Reliability: `buzz-bridge run` against a hostile relay that, once the daemon
 * has subscribed, sends 5,000 malformed frames and events on its channel subscription —
 * invalid JSON, unknown message types, wrong ids, bad signatures (some claiming the
 * owner, one a forged `!shutdown`), 300 KB content, 10,000 tags, control characters.
 * The daemon must stay up, publish nothing in answer (judged by what the relay received,
 * not by log names), keep its log within the design's bounds, and then still answer a real
 * owner mention exactly once in its thread. What the flood costs in memory is
 * `npm run bench`'s figure 7h (bench/hostile.ts), against the flood's size in the same run.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { getEventHash, validateEvent, type Event } from "nostr-tools";
import { finalizeEvent } from "nostr-tools/wasm";
import { World, type DaemonProc } from "../kit/world.js";
import { hostileFrames, startHostileRelay, type HostileRelay } from "../kit/hostile-relay.js";
import { nowSec } from "../src/base/time.js";
import { initCrypto } from "../src/nostr/verify.js";
import { threadRootOf } from "../src/nostr/events.js";
import { KIND } from "../src/nostr/kinds.js";
import { leakedSecrets } from "../kit/reliability-helpers.js";

const FRAMES = 5000;
let w: World;
let hostile: HostileRelay;
let d: DaemonProc;
const channel = randomUUID();

before(async () => {
  await initCrypto();
  w = await World.create();
  hostile = await startHostileRelay({
    channel,
    name: "hostile-room",
    about: "A relay that lies",
    members: [w.agent.pk, w.owner.pk, w.stranger.pk],
  });
  d = await w.startDaemon({ relay: { url: hostile.url }, log: { level: "info" } });
});
after(async () => {
  await w.close();
  await hostile.close();
});

/**
 * Frames carrying a well-formed mention (right id, our channel) from someone other than the
 * owner: the policy refuses each before any signature check (verifying what is refused
 * anyway would spend CPU on what an attacker sends for free), so each earns one gate line.
 */
function refusableMentions(frames: string[], sub: string, channel: string, owner: string, agent: string): number {
  const ids = new Set<string>(); // the same event twice is one event (the client de-duplicates)
  for (const f of frames) {
    try {
      const m = JSON.parse(f) as unknown[];
      const e = m[2] as Event;
      if (m[0] !== "EVENT" || m[1] !== sub || !validateEvent(e) || getEventHash(e) !== e.id) continue;
      if (
        e.kind === 9 &&
        e.pubkey !== owner &&
        e.tags.some((t) => t[0] === "h" && t[1] === channel) &&
        e.tags.some((t) => t[0] === "p" && t[1] === agent)
      )
        ids.add(e.id);
    } catch {
      /* not JSON */
    }
  }
  return ids.size;
}

/**
 * A mention of the agent in the channel, signed by `sk`, copied through JSON as if it came
 * off the wire (no mark left on it by signing).
 */
function signedMention(sk: Uint8Array, content: string): Event {
  const ev = finalizeEvent(
    {
      kind: 9,
      created_at: nowSec(),
      content,
      tags: [
        ["h", channel],
        ["p", w.agent.pk],
      ],
    },
    sk,
  );
  return JSON.parse(JSON.stringify(ev)) as Event;
}

test(`${FRAMES} malformed frames and forged events: no crash, nothing published, bounded log, then a real owner mention answered once`, {
  timeout: 80_000,
}, async () => {
  const sub = await hostile.subscribed();
  const linesBefore = d.logs.length;
  const frames = hostileFrames({ sub, channel, agent: w.agent.pk, owner: w.owner.pk, strangerSk: w.stranger.sk, total: FRAMES });
  for (let i = 0; i < frames.length; i += 500) await hostile.send(frames.slice(i, i + 500));
  // A sentinel after the flood, on the same socket: once the gate has decided it, every frame before it was handled.
  const sentinel = signedMention(w.stranger.sk, "@agent sentinel");
  await hostile.send([JSON.stringify(["EVENT", sub, sentinel])]);
  await d.waitLog((l) => l.evt === "gate.denied" && l.event === sentinel.id, 60_000);

  assert.equal(d.proc.exitCode, null, "the daemon is still running");
  assert.equal(d.proc.signalCode, null);
  // What the daemon did, as the relay saw it (its log could be forged through an agent's stderr): nothing at all.
  // Only what any running daemon publishes (its presence, kind 20001, its instance beacon,
  // kind 30078 `buzz-bridge:instance:…`, docs/architecture.md §1, and at start its profile,
  // kind 0, and directory entry, kind 10100, docs/protocol.md §10), and one 🔒 for the stranger,
  // whose events were really signed (on_denied: react, once an hour per author): nothing for
  // anything forged.
  const beacon = (e: Event) => e.kind === KIND.appData && e.tags.some((t) => t[0] === "d" && t[1]?.startsWith("buzz-bridge:instance:"));
  const atStart = (e: Event) => e.kind === KIND.profile || e.kind === KIND.agentDirectory;
  // Each event once, as a relay keeps it: a send repeated because its OK came late (the
  // publisher's retry of the same signed event, docs/architecture.md §4) is one publish.
  const kept = () => [...new Map(hostile.published().map((e) => [e.id, e])).values()];
  const answers = () => kept().filter((e) => e.kind !== 20001 && !beacon(e) && !atStart(e));
  const flood = answers();
  assert.deepEqual(
    flood.map((e) => `${e.kind}:${e.content}`),
    ["7:🔒"],
    "no reply, no typing, no reaction but one lock for the flood, and the forged !shutdown did nothing",
  );
  assert.deepEqual(
    kept()
      .filter(atStart)
      .map((e) => e.kind)
      .sort((a, b) => a - b),
    [KIND.profile, KIND.agentDirectory],
    // What each publish held, and the daemon's lines that say why it ran (a run beside a second
    // copy of the suite once saw the directory entry twice).
    `the start's profile and directory entry, once each: nothing forged made the daemon publish them again; published: ${JSON.stringify(
      hostile
        .published()
        .filter(atStart)
        .map((e) => ({ id: e.id.slice(0, 12), kind: e.kind, created_at: e.created_at, content: e.content })),
    )}; the daemon: ${JSON.stringify(d.logs.filter((l) => /^(profile|directory|relay\.channel)/.test(String(l.evt))))}`,
  );
  assert.equal(flood[0]!.tags.find((t) => t[0] === "p")?.[1], w.stranger.pk, "the lock goes to the stranger who really signed");

  const forged = d.logs.filter((l) => l.evt === "gate.denied" && l.reason === "bad-signature");
  assert.ok(forged.length > 0, "events claiming the owner with a bad signature are denied as bad-signature");
  assert.ok(
    forged.every((l) => l.level === "info"),
    "denials are info lines",
  );
  assert.ok(
    forged.length <= 20,
    `forged-signature denials are rate-limited (${forged.length} lines; the rest are counted when the minute ends)`,
  );
  const invalid = d.logs.filter((l) => l.evt === "relay.invalid_frame");
  assert.ok(invalid.length > 0 && invalid.length <= 5, `invalid frames are logged, rate-limited (${invalid.length} lines)`);
  // The design's budget: one line per well-formed mention the policy refused, 20
  // forged-signature lines a minute, 5 lines a minute per kind of relay rubbish (a few
  // kinds) — nothing else that grows with the flood.
  const signedDenials = refusableMentions(frames, sub, channel, w.owner.pk, w.agent.pk) + 1;
  const newLines = d.logs.slice(linesBefore);
  const byEvt = newLines.reduce<Record<string, number>>((a, l) => ((a[String(l.evt)] = (a[String(l.evt)] ?? 0) + 1), a), {});
  const policyDenials = newLines.filter((l) => l.evt === "gate.denied" && l.reason !== "bad-signature").length;
  // A refusal due an answer (🔒, once per author) is verified first: the first forged one from
  // a stranger is then a bad-signature line instead (which the forged-line limit may hold back).
  assert.ok(
    policyDenials === signedDenials || policyDenials === signedDenials - 1,
    `each well-formed refused mention has its line, nothing else does (${policyDenials} lines for ${signedDenials})`,
  );
  const rest = newLines.length - policyDenials - forged.length;
  assert.ok(rest <= 40, `other lines stay within the rate limits: ${rest} (${JSON.stringify(byEvt)})`);
  assert.ok(!d.logs.some((l) => JSON.stringify(l).length > 20_000), "no log line carries a 300 KB payload");

  if (process.env.RELIABILITY_DEBUG) console.log({ byEvt, signedDenials, conns: hostile.stats() });

  // The relay lied 5,000 times; a real mention from the owner is still answered, once, in its thread.
  const real = signedMention(w.owner.sk, "@agent [real-after-flood] are you still there?");
  hostile.remember(real);
  await hostile.send([JSON.stringify(["EVENT", sub, real])]);
  await d.waitLog((l) => l.evt === "turn.end", 30_000);
  const replies = answers().filter((e) => e.kind === 9);
  assert.equal(
    replies.length,
    1,
    `exactly one message published: ${replies.map((e) => JSON.stringify(e.content.slice(0, 60))).join(" | ")}`,
  );
  assert.ok(replies[0]!.content.includes("[real-after-flood]"), "it answers the real mention");
  assert.equal(replies[0]!.tags.find((t) => t[0] === "e" && t[3] === "reply")?.[1], real.id, "it replies to the mention …");
  assert.equal(threadRootOf(replies[0]!), real.id, "… in the mention's own thread");
  const after = answers().slice(flood.length);
  assert.ok(
    after.every((e) => e.tags.some((t) => t[0] === "h" && t[1] === channel)),
    "everything it published is in the channel",
  );
  // The channel's work status (NIP-AW) names the channel, not a message: it is the turn of the real mention's.
  const status = after.filter((e) => e.kind === KIND.workStatus);
  assert.ok(
    status.every((e) => e.tags.some((t) => t[0] === "d" && t[1] === channel)),
    "the work status is the channel's",
  );
  assert.ok(
    after.filter((e) => e.kind !== KIND.workStatus).every((e) => e.tags.some((t) => t[0] === "e" && t[1] === real.id)),
    "every reaction, typing and reply after the flood concerns the real mention",
  );

  assert.deepEqual(leakedSecrets(d.raw(), [w.agent, w.owner, w.teammate, w.stranger]), [], "no secret in the daemon's output");
});
