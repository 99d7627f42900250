import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";
import { finalizeEvent, type Event } from "nostr-tools";
import { verifySignature } from "../../src/nostr/verify.js";
import { client, identity, mention } from "../fixtures/relay-helpers.js";
import { sleep, waitFor } from "../../kit/wait.js";

const bridge = identity();
const stranger = identity();
const CH = "11111111-2222-4333-8444-555555555555";
const OTHER = "99999999-2222-4333-8444-555555555555";
const wire = (e: Event): Event => JSON.parse(JSON.stringify(e));

/** A relay that authenticates anyone, then answers the channel REQ with rubbish and one good event. */
async function hostileRelay(good: Event, badSig: Event) {
  const server = createServer();
  const wss = new WebSocketServer({ server });
  let connections = 0;
  wss.on("connection", (ws: WebSocket) => {
    const n = ++connections;
    ws.send(JSON.stringify(["AUTH", "challenge-" + n]));
    ws.on("message", (data) => {
      const msg = JSON.parse(data.toString()) as unknown[];
      if (msg[0] === "AUTH") return ws.send(JSON.stringify(["OK", (msg[1] as Event).id, true, ""]));
      if (msg[0] !== "REQ") return;
      const sub = msg[1] as string;
      if (sub !== "channels") return ws.send(JSON.stringify(["EOSE", sub]));
      const send = (x: unknown) => ws.send(typeof x === "string" ? x : JSON.stringify(x));
      send("this is not json");
      send({ not: "an array" });
      send(["EVENT", sub, { id: "short" }]);
      send(["EVENT", "someone-elses-sub", good]);
      send(["EVENT", sub, { ...good, content: "tampered after signing" }]);
      send(["EVENT", sub, wire(finalizeEvent(mention(OTHER, bridge.pk, "wrong channel"), stranger.sk))]);
      send(["EVENT", sub, wire(finalizeEvent({ ...mention(CH, bridge.pk, "x"), kind: 7 }, stranger.sk))]);
      send(["EVENT", sub, badSig]);
      send(["WHAT", sub]);
      send(["EVENT", sub, good]);
      send(["EVENT", sub, good]);
      send(["EOSE", sub]);
      if (n === 1) {
        // Then die mid-frame: a frame header promising 300 bytes, 3 of them, and the socket gone.
        const raw = (ws as unknown as { _socket: import("node:net").Socket })._socket;
        raw.write(Buffer.from([0x81, 0x7e, 0x01, 0x2c, 0x5b, 0x22, 0x45]));
        setTimeout(() => raw.destroy(), 20);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
    close: () =>
      new Promise<void>((r) => {
        for (const c of wss.clients) c.terminate();
        wss.close();
        server.close(() => r());
      }),
  };
}

const cleanup: (() => unknown)[] = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

test("garbage, foreign channels, tampered ids, bad signatures and a cut frame never reach the handler", async () => {
  const good = wire(finalizeEvent(mention(CH, bridge.pk, "the only real mention"), stranger.sk));
  const badSig = wire(finalizeEvent(mention(CH, bridge.pk, "forged"), stranger.sk));
  badSig.sig = badSig.sig.slice(0, -2) + (badSig.sig.endsWith("00") ? "11" : "00");
  const relay = await hostileRelay(good, badSig);
  cleanup.push(() => relay.close());
  const bot = client(relay, bridge, { verifySignatures: true });
  cleanup.push(() => bot.stop());
  const got: Event[] = [];
  bot.on("event", (ev) => got.push(ev));
  bot.setChannels([{ id: CH, kinds: [9], requireMention: true }]);
  await bot.start();

  await waitFor(() => relay.connections() >= 2 && bot.metrics.reconnects >= 1, { what: "a reconnect after the cut frame" });
  await bot.waitSubscribed(5000);
  await sleep(100); // a duplicate or invalid event let through would have arrived by now
  assert.deepEqual(
    got.map((e) => e.id),
    [good.id],
    "only the valid event, once, across both connections",
  );
  const m = bot.metrics;
  assert.ok(m.invalidFrames >= 5, `invalid frames counted: ${m.invalidFrames}`);
  assert.ok(m.unrequested >= 2, "foreign channel and unrequested kind counted");
  assert.ok(m.badSignatures >= 1, "the forged event was caught");
});

test("without verifySignatures a bad signature reaches the handler but fails the gate's check", async () => {
  const good = wire(finalizeEvent(mention(CH, bridge.pk, "real"), stranger.sk));
  const badSig = wire(finalizeEvent(mention(CH, bridge.pk, "forged"), stranger.sk));
  badSig.sig = badSig.sig.slice(0, -2) + (badSig.sig.endsWith("00") ? "11" : "00");
  const relay = await hostileRelay(good, badSig);
  cleanup.push(() => relay.close());
  const bot = client(relay, bridge);
  cleanup.push(() => bot.stop());
  const got: Event[] = [];
  bot.on("event", (ev) => got.push(ev));
  bot.setChannels([{ id: CH, kinds: [9], requireMention: true }]);
  await bot.start();
  await waitFor(() => got.length >= 2, { what: "both events at the handler" });
  const forged = got.find((e) => e.id === badSig.id)!;
  assert.equal(verifySignature(forged), false);
  assert.equal(verifySignature(got.find((e) => e.id === good.id)!), true);
});
