// The baseline for the busy-channel and memory figures: a plain nostr-tools subscriber
// in its own process (as the daemon is), NIP-42 with the wasm signer, one REQ for the
// same channels and kinds the daemon subscribes, verifying every event (nostr-tools'
// default). Env: BENCH_URL, BENCH_SK (hex), BENCH_CHANNELS (JSON array), BENCH_EXPECT.
// Prints `ready` after EOSE, then one JSON line {received, firstAt, lastAt} (epoch ms,
// sub-millisecond) when BENCH_EXPECT events have arrived.
import { AbstractRelay } from "nostr-tools/abstract-relay";
import * as wasm from "nostr-tools/wasm";
import { initNostrWasm } from "nostr-wasm";
import WebSocket from "ws";

wasm.setNostrWasm(await initNostrWasm());
const sk = Uint8Array.from(Buffer.from(process.env.BENCH_SK, "hex"));
const channels = JSON.parse(process.env.BENCH_CHANNELS);
const expect = Number(process.env.BENCH_EXPECT);
const now = () => performance.timeOrigin + performance.now();
const relay = new AbstractRelay(process.env.BENCH_URL, { verifyEvent: wasm.verifyEvent, websocketImplementation: WebSocket });
// Buzz wants the relay tag without the trailing slash nostr-tools adds.
relay.onauth = async (t) =>
  wasm.finalizeEvent({ ...t, tags: t.tags.map((x) => (x[0] === "relay" ? ["relay", x[1].replace(/\/$/, "")] : x)) }, sk);
await relay.connect();
// Subscribe only once authenticated: a REQ that races the AUTH is CLOSED with auth-required.
for (let i = 0; i < 500 && !relay.authPromise; i++) await new Promise((r) => setTimeout(r, 10));
if (!relay.authPromise) throw new Error("plain subscriber: the relay sent no AUTH challenge");
await relay.authPromise;
let received = 0;
let firstAt = 0;
relay.subscribe([{ kinds: [9], "#h": channels, since: Math.floor(Date.now() / 1000) }], {
  onevent: () => {
    const t = now();
    if (received++ === 0) firstAt = t;
    if (received === expect) console.log(JSON.stringify({ received, firstAt, lastAt: t }));
  },
  oneose: () => console.log("ready"),
  onclose: (reason) => {
    console.error(`plain subscriber: subscription closed: ${reason}`);
    process.exit(2);
  },
});
process.on("SIGTERM", () => process.exit(0));
