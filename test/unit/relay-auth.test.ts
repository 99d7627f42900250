import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";
import type { Event } from "nostr-tools";
import { client, FAST, identity, relayWith } from "../fixtures/relay-helpers.js";
import { sleep, waitFor } from "../../kit/wait.js";

const bridge = identity();
const cleanup: (() => unknown)[] = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

/** A scripted relay: counts frames by type and lets a test decide how to answer each one. */
async function scriptedRelay(onFrame: (ws: WebSocket, msg: unknown[], conn: number) => void) {
  const server = createServer();
  const wss = new WebSocketServer({ server });
  const frames: { conn: number; msg: unknown[] }[] = [];
  let conns = 0;
  wss.on("connection", (ws) => {
    const conn = ++conns;
    ws.send(JSON.stringify(["AUTH", `c${conn}`]));
    ws.on("message", (d) => {
      const msg = JSON.parse(d.toString()) as unknown[];
      frames.push({ conn, msg });
      onFrame(ws, msg, conn);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const relay = {
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    frames,
    conns: () => conns,
    count: (type: string, sub?: string) => frames.filter((f) => f.msg[0] === type && (sub === undefined || f.msg[1] === sub)).length,
    close: () =>
      new Promise<void>((r) => {
        for (const c of wss.clients) c.terminate();
        wss.close();
        server.close(() => r());
      }),
  };
  cleanup.push(() => relay.close());
  return relay;
}

test("a refused AUTH is logged with the relay's reason, raises no unhandled rejection, and is retried", async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => unhandled.push(e);
  process.on("unhandledRejection", onUnhandled);
  cleanup.push(() => process.off("unhandledRejection", onUnhandled));
  const relay = await relayWith([]); // the bridge is not a relay member
  cleanup.push(() => relay.close());
  const bot = client(relay, bridge);
  cleanup.push(() => bot.stop());
  const reasons: string[] = [];
  bot.on("auth-failed", (r) => reasons.push(r));
  await bot.start();
  await waitFor(() => reasons.length >= 2, { what: "a second refused AUTH: it keeps trying on new connections" });
  assert.match(reasons[0]!, /^restricted: not a relay member/);
  assert.match(bot.lastAuthError ?? "", /not a relay member/);
  assert.notEqual(bot.state, "authenticated");
  await sleep(50); // a rejection left unhandled would be reported by now
  assert.deepEqual(unhandled, []);

  relay.addRelayMember(bridge.pk);
  assert.equal(await bot.waitAuthenticated(5000), true, "once admitted, the next attempt succeeds");
  assert.equal(bot.lastAuthError, undefined);
});

test("the relay tag has no trailing slash, and CLOSED auth-required is answered by one re-auth and one re-send", async () => {
  let refusedOnce = false;
  const relay = await scriptedRelay((ws, msg) => {
    if (msg[0] === "AUTH") return ws.send(JSON.stringify(["OK", (msg[1] as Event).id, true, ""]));
    if (msg[0] !== "REQ") return;
    if (msg[1] === "channels" && !refusedOnce) {
      refusedOnce = true;
      return ws.send(JSON.stringify(["CLOSED", "channels", "auth-required: please authenticate again"]));
    }
    if (msg[1] === "channels") return ws.send(JSON.stringify(["CLOSED", "channels", "auth-required: still no"]));
    ws.send(JSON.stringify(["EOSE", msg[1]]));
  });
  const bot = client(relay, bridge);
  cleanup.push(() => bot.stop());
  bot.setChannels([{ id: "c1", kinds: [9] }]);
  await bot.start();
  await waitFor(() => relay.count("REQ", "channels") >= 2, { what: "the channels REQ re-sent after auth-required" });
  await sleep(200); // a third REQ or AUTH (a re-send loop) would show up by now
  const auth = relay.frames.find((f) => f.msg[0] === "AUTH")!.msg[1] as Event;
  assert.deepEqual(
    auth.tags.find((t) => t[0] === "relay"),
    ["relay", relay.url.replace(/\/$/, "")],
  );
  assert.deepEqual(
    auth.tags.find((t) => t[0] === "challenge"),
    ["challenge", "c1"],
  );
  assert.equal(relay.count("AUTH"), 2, "re-authenticated once");
  assert.equal(relay.count("REQ", "channels"), 2, "re-sent once, then gave up instead of looping");
  const reqs = relay.frames.filter((f) => f.msg[0] === "REQ").map((f) => relay.frames.indexOf(f));
  const firstAuth = relay.frames.findIndex((f) => f.msg[0] === "AUTH");
  assert.ok(
    reqs.every((i) => i > firstAuth),
    "no REQ before the first AUTH",
  );
});

test("a relay that stops answering pings is declared dead and the bridge reconnects", async () => {
  const relay = await scriptedRelay((ws, msg, conn) => {
    if (msg[0] === "AUTH") {
      ws.send(JSON.stringify(["OK", (msg[1] as Event).id, true, ""]));
      // First connection: stop reading, so pings go unanswered (a half-dead TCP link).
      if (conn === 1) setTimeout(() => (ws as unknown as { _socket: Socket })._socket.pause(), 20);
      return;
    }
    if (msg[0] === "REQ") ws.send(JSON.stringify(["EOSE", msg[1]]));
  });
  const bot = client(relay, bridge, { connection: { ...FAST, pingIntervalMs: 100, pongTimeoutMs: 150 } });
  cleanup.push(() => bot.stop());
  await bot.start();
  const ok = await waitFor(() => relay.conns() >= 2 && bot.state === "subscribed", { what: "a second connection, subscribed" });
  assert.equal(ok, true);
  assert.ok(bot.metrics.dead >= 1);
  assert.ok(bot.metrics.reconnects >= 1);
});

test("probeRelay reports success, the relay's refusal reason, or an unreachable relay", async () => {
  const { probeRelay } = await import("../../src/relay/probe.js");
  const { RelayAuthError, RelayUnreachableError } = await import("../../src/relay/errors.js");
  const relay = await relayWith([bridge]);
  cleanup.push(() => relay.close());
  assert.ok((await probeRelay(relay.url, bridge.sk)).ms >= 0);
  await assert.rejects(
    probeRelay(relay.url, identity().sk),
    (e: unknown) => e instanceof RelayAuthError && /not a relay member/.test(e.message),
  );
  const closed = await relayWith([]);
  const deadUrl = closed.url;
  await closed.close();
  await assert.rejects(probeRelay(deadUrl, bridge.sk, { timeoutMs: 500 }), RelayUnreachableError);
});

test("probeRelay says whether the relay challenged: a Buzz relay does, a relay that sends no AUTH does not", async () => {
  const { probeRelay } = await import("../../src/relay/probe.js");
  const relay = await relayWith([bridge]);
  cleanup.push(() => relay.close());
  assert.equal((await probeRelay(relay.url, bridge.sk)).unchallenged, false);
  // A plain WebSocket endpoint that never sends AUTH: the connection goes on unauthenticated after the challenge wait.
  const silent = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  cleanup.push(() => new Promise((r) => silent.close(r)));
  await new Promise((r) => silent.once("listening", r));
  const probe = await probeRelay(`ws://127.0.0.1:${(silent.address() as AddressInfo).port}`, bridge.sk, { timeoutMs: 8000 });
  assert.equal(probe.unchallenged, true);
});
