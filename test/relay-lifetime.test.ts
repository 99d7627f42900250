/**
 * Connection lifetime (docs/protocol.md §1, "Connection lifetime"): a relay that closes every
 * socket after a fixed time, stated in its NIP-11 or not. The bridge replaces its socket
 * before the deadline — make-before-break when its frame budget has room for a second
 * socket, otherwise at a quiet moment — re-authenticates, resumes every subscription with
 * `since`, and nothing is lost or doubled across hundreds of planned reconnects; judged by
 * what the channel shows (kit/channel-oracle.ts).
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import type { Event } from "nostr-tools";
import { LifetimePlanner } from "../src/relay/lifetime.js";
import type { RelayConnection } from "../src/relay/connection.js";
import { createLogger } from "../src/base/log.js";
import { client, identity, mention, relayWith } from "./fixtures/relay-helpers.js";
import { assertAnsweredOnce, ask, type Asked } from "../kit/channel-oracle.js";
import { World } from "../kit/world.js";
import { sleep, waitFor } from "../kit/wait.js";

const cleanup: (() => unknown)[] = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

/** A socket as the planner sees it: when it opened, whether it carries anything, and what was done to it. */
class FakeSocket extends EventEmitter {
  openedAt: number | undefined = Date.now();
  authenticated = true;
  busy = false;
  state = "subscribed";
  done: string[] = [];
  recycle() {
    this.done.push("recycle");
  }
  retire() {
    this.done.push("retire");
  }
  stop() {
    this.done.push("stop");
  }
}

test("the planner: a second socket when the budget has room, else the first quiet moment before the deadline", async () => {
  const log = createLogger({ level: "silent" });
  const run = async (free: number, busy: boolean) => {
    const old = new FakeSocket();
    old.busy = busy;
    let next: FakeSocket | undefined;
    let current = old;
    const p = new LifetimePlanner({
      current: () => current as unknown as RelayConnection,
      spawn: () => (next = new FakeSocket()) as unknown as RelayConnection,
      adopt: (n) => (current = n as unknown as FakeSocket),
      framesToSubscribe: () => 3,
      budgetFree: () => free,
      logger: log,
    });
    p.setLifetime(1000); // replaced 500 ms before the deadline
    return { p, old, current: () => current };
  };
  const roomy = await run(10, true);
  await waitFor(() => roomy.current() !== roomy.old, { what: "the successor adopted" });
  roomy.p.stop();
  assert.deepEqual(roomy.old.done, ["retire"], "the old socket retires once its publishes are answered");
  assert.equal(roomy.p.metrics.makeBeforeBreak, 1);

  const short = await run(1, true);
  await sleep(700); // past the planned time: the socket still carries a publish, so it waits
  assert.deepEqual(short.old.done, [], "a busy socket is not cut");
  short.old.busy = false;
  short.old.emit("idle");
  assert.deepEqual(short.old.done, ["recycle"], "cut at the quiet moment, and reopened at once");
  assert.equal(short.p.metrics.quietBreak, 1);
  short.p.stop();
});

test("hundreds of planned reconnects: every event delivered once, every publish stored once", async () => {
  const rx = identity();
  const tx = identity();
  // 250 ms sockets; no quotas (this is about lifetimes, not budgets).
  const relay = await relayWith([rx, tx], { noLimits: true, limits: { maxConnectionLifetimeMs: 250 } });
  cleanup.push(() => relay.close());
  const ch = await relay.createChannel({ name: "short-lived", members: [rx.pk, tx.pk] });
  const free = { connection: { frameQuota: null } };
  const receiver = client(relay, rx, free);
  const sender = client(relay, tx, free);
  cleanup.push(
    () => receiver.stop(),
    () => sender.stop(),
  );
  const seen = new Map<string, number>();
  receiver.on("event", (ev: Event) => seen.set(ev.id, (seen.get(ev.id) ?? 0) + 1));
  receiver.setChannels([{ id: ch, kinds: [9], requireMention: true }]);
  await receiver.start();
  await sender.start();
  assert.equal(await receiver.waitSubscribed(10_000), true);

  const sent: string[] = [];
  const t0 = Date.now();
  while (Date.now() - t0 < 25_000) {
    const { event, outcome } = await sender.send(mention(ch, rx.pk, `tick ${sent.length}`));
    assert.ok(
      outcome.status === "accepted" || outcome.status === "duplicate",
      `publish ${sent.length}: ${outcome.status} ${outcome.reason ?? ""}`,
    );
    sent.push(event.id);
    await sleep(20); // pacing the stream
  }
  await waitFor(() => sent.every((id) => seen.has(id)), {
    timeoutMs: 15_000,
    what: () => `all ${sent.length} events delivered (have ${seen.size})`,
  });
  const doubled = [...seen.values()].filter((n) => n > 1).length;
  assert.equal(doubled, 0, "no event reached the handler twice");
  const stored = await receiver.query([{ kinds: [9], "#h": [ch], limit: 2000 }]);
  assert.equal(new Set(stored.map((e) => e.id)).size, sent.length, "each publish stored once");
  const replaced = (c: typeof receiver) => c.metrics.rotations.makeBeforeBreak + c.metrics.rotations.quietBreak;
  const planned = replaced(receiver) + replaced(sender);
  assert.ok(
    planned >= 100,
    `the two clients replaced their sockets ${planned} times: receiver ${JSON.stringify(receiver.metrics.rotations)}, sender ${JSON.stringify(sender.metrics.rotations)}`,
  );
  assert.equal(receiver.metrics.relayClosed, 0, "never once did the relay have to close the receiver's socket");
});

/** Mentions spread over the run, across three channels, each with an oracle marker. */
async function stream(w: World, channels: string[], n: number, everyMs: number): Promise<Asked[]> {
  const asked: Asked[] = [];
  for (let i = 0; i < n; i++) {
    asked.push(await ask(w.owner, `mention ${i}`, { channel: channels[i % channels.length]! }));
    await sleep(everyMs); // pacing the stream
  }
  return asked;
}

test("a relay closing every socket after 3 s (stated in its NIP-11): 60 mentions, each answered once", async () => {
  const w = await World.create({ relayLimits: { maxConnectionLifetimeMs: 3000 } });
  cleanup.push(() => w.close());
  const channels = [w.channel, await w.addChannel({ name: "second" }), await w.addChannel({ name: "third" })];
  // One session per channel: mentions arriving during a turn are answered together in the next.
  const d = await w.startDaemon({ agent: { max_concurrent: 3, session_scope: "channel" } });
  const asked = await stream(w, channels, 60, 200);
  await assertAnsweredOnce(w, asked, { timeoutMs: 60_000 });
  const rotated = d.logs.filter((l) => l.evt === "relay.rotated").length;
  assert.ok(rotated >= 6, `the daemon replaced its socket before the deadline (${rotated} times)`);
});

test("a relay closing the socket every 2 s without saying so: every mention answered once", async () => {
  const w = await World.create({ relayLimits: { maxConnectionLifetimeMs: 2000 } });
  cleanup.push(() => w.close());
  // Its NIP-11 states no lifetime: the daemon only learns by being cut off.
  const { nip11Document } = await import("../src/devrelay/index.js");
  const doc = nip11Document(w.relay.relayPubkey, { ...w.relay.limits, maxConnectionLifetimeMs: null });
  w.relay.setNip11({ document: doc });
  const channels = [w.channel, await w.addChannel({ name: "second" })];
  const d = await w.startDaemon({ agent: { max_concurrent: 2, session_scope: "channel" } });
  const asked = await stream(w, channels, 30, 300);
  await assertAnsweredOnce(w, asked, { timeoutMs: 60_000 });
  const cut = d.logs.filter((l) => l.evt === "relay.disconnected").length;
  assert.ok(cut >= 5, `the relay really cut the daemon off (${cut} times)`);
  assert.equal(
    d.logs.filter((l) => l.evt === "relay.disconnected" && l.level === "warn").length,
    0,
    "each was a scheduled close, reconnected at once, not a failure backed off",
  );
});
