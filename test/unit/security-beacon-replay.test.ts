/**
 * A relay that replays a stopped instance's last "running" beacon must not stop a running
 * daemon: the beacon is older than that instance's "stopped", or the relay's own record (an
 * addressable event keeps its newest) shows it stopped. A genuine live instance that started
 * earlier still makes this one give way. The relay here keeps signed events as NIP-01 says
 * for addressable kinds (newest per `d`) and can push any event onto the subscription.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { finalizeEvent, getPublicKey, generateSecretKey, nip44, type Event, type EventTemplate } from "nostr-tools";
import { matchFilter, type Filter } from "nostr-tools/filter";
import { beaconTemplate, InstanceBeacon, type InstanceInfo } from "../../src/buzz/instance.js";
import { nowSec } from "../../src/base/time.js";
import { captureLogger } from "../../kit/queue-helpers.js";
import { waitFor } from "../../kit/wait.js";

const sk = generateSecretKey();
const pk = getPublicKey(sk);
const key = nip44.getConversationKey(sk, pk);

function relay() {
  const stored = new Map<string, Event>();
  let push: ((ev: Event) => void) | undefined;
  const keep = (ev: Event) => {
    const d = `${ev.kind}:${ev.tags.find((t) => t[0] === "d")?.[1]}`;
    const had = stored.get(d);
    if (!had || ev.created_at > had.created_at) stored.set(d, ev);
  };
  return {
    keep,
    /** The relay sends `ev` on the subscription, whatever it keeps. */
    replay: (ev: Event) => push?.(ev),
    port: {
      send: async (t: EventTemplate) => {
        keep(finalizeEvent(t, sk));
        return { outcome: { status: "ok" } };
      },
      query: async (filters: Filter[]) => [...stored.values()].filter((e) => filters.some((f) => matchFilter(f, e))),
      watch: (_id: string, _filters: () => Filter[], on: (ev: Event) => void) => {
        push = on;
      },
    },
  };
}

/** Another instance of the identity that started 100 s before this one. */
const other: InstanceInfo = { instance: "other-instance", host: "elsewhere", pid: 42, started_at: nowSec() - 100, state: "running" };
const beacon = (state: InstanceInfo["state"], created: number) => finalizeEvent(beaconTemplate({ ...other, state }, key, created), sk);

async function running(r: ReturnType<typeof relay>) {
  const { logger, lines } = captureLogger("debug");
  const lost: InstanceInfo[] = [];
  const b = new InstanceBeacon({
    relay: r.port as never,
    publisher: r.port as never,
    secretKey: sk,
    pubkey: pk,
    instance: "this-instance",
    logger,
    onLost: (o) => lost.push(o),
  });
  await b.claim();
  b.start();
  return { b, lost, lines };
}

describe("a replayed beacon of a stopped instance", () => {
  test("replayed after its stop was seen: ignored as older, the daemon goes on", async () => {
    const r = relay();
    const d = await running(r);
    const was = beacon("running", nowSec() - 20);
    const stopped = beacon("stopped", nowSec() - 10);
    r.keep(stopped);
    r.replay(stopped);
    r.replay(was);
    await waitFor(() => d.lines.find((l) => l.evt === "instance.beacon_ignored"));
    assert.deepEqual(d.lost, []);
    assert.equal(d.lines.find((l) => l.evt === "instance.beacon_ignored")?.reason, "replayed");
    assert.equal(d.lines.filter((l) => l.evt === "instance.conflict").length, 0);
    await d.b.stop();
  });

  test("replayed when only the relay kept its stop: the relay's record decides, the daemon goes on", async () => {
    const r = relay();
    const d = await running(r);
    r.keep(beacon("stopped", nowSec() - 10));
    r.replay(beacon("running", nowSec() - 20));
    await waitFor(() => d.lines.find((l) => l.evt === "instance.beacon_ignored"));
    assert.deepEqual(d.lost, []);
    assert.equal(d.lines.find((l) => l.evt === "instance.beacon_ignored")?.reason, "not-live-on-relay");
    await d.b.stop();
  });

  test("a live instance that started earlier: this daemon gives way, once", async () => {
    const r = relay();
    const d = await running(r);
    const live = beacon("running", nowSec());
    r.keep(live);
    r.replay(live);
    await waitFor(() => d.lost.length);
    r.replay(live);
    assert.equal(d.lost.length, 1);
    assert.equal(d.lost[0]!.instance, other.instance);
    assert.equal(d.lines.filter((l) => l.evt === "instance.conflict" && l.action === "stopping").length, 1);
    await d.b.stop();
  });
});
