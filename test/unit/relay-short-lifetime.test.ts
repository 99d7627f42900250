/**
 * A relay that ends every socket 1 s after it opened (and says so in its NIP-11): the client
 * does not replace sockets ahead of so short a lifetime, waits a growing pause between them
 * (1 s, 2 s, 4 s, … to 60 s; short-lives.ts states the budget: over 60 s at most 7
 * reconnects, their AUTH and REQ frames under 5 % of Buzz's quota, 2 info lines), and logs
 * it once a minute instead of per reconnect. The dev relay on 127.0.0.1 and the real client
 * with Buzz's frame quota.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { client, identity, relayWith } from "../fixtures/relay-helpers.js";
import { captureLogger } from "../../kit/queue-helpers.js";
import { waitFor } from "../../kit/wait.js";

const cleanup: (() => unknown)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

test("a 1 s connection lifetime: growing pauses, REQ frames and info lines within the stated budget", async () => {
  const rx = identity();
  const relay = await relayWith([rx], { limits: { maxConnectionLifetimeMs: 1000 } });
  cleanup.push(() => relay.close());
  const { logger, lines } = captureLogger("debug");
  const c = client(relay, rx, { logger });
  cleanup.push(() => c.stop());
  const ch = await relay.createChannel({ name: "short-lived", members: [rx.pk] });
  c.setChannels([{ id: ch, kinds: [9], requireMention: true }]);
  await c.start();
  assert.equal(await c.waitSubscribed(10_000), true);
  const short = () => lines.filter((l) => l.evt === "relay.disconnected" && l.level === "debug");
  // Evidence: the fifth socket in a row that the relay ended within moments.
  await waitFor(() => short().length >= 5, { timeoutMs: 90_000, what: () => `five short-lived sockets (have ${short().length})` });
  const waits = short().map((l) => Number(l.retry_ms));
  for (let i = 1; i < waits.length; i++) assert.ok(waits[i]! > waits[i - 1]! * 1.5, `the pause grows: ${waits.join(", ")} ms`);
  assert.ok(waits[0]! >= 900, `the first pause is a back-off, not an immediate reconnect: ${waits[0]} ms`);
  // Five pauses of 1+2+4+8+16 s cover the first half minute: reconnects and REQs stay few.
  const { reconnects, reqFrames } = c.metrics;
  assert.ok(reconnects <= 6, `reconnects: ${reconnects}`);
  assert.ok(reqFrames <= 6 * 4, `REQ frames: ${reqFrames}`);
  assert.equal(c.metrics.rotations.makeBeforeBreak + c.metrics.rotations.quietBreak, 0, "no socket replaced ahead of so short a lifetime");
  const info = lines.filter((l) => l.level !== "debug" && String(l.evt).startsWith("relay."));
  const said = info.filter((l) => l.evt === "relay.short_lifetime");
  assert.equal(said.length, 1, "said once a minute, not per reconnect");
  assert.ok(info.length <= 6, `info lines from the relay client: ${info.map((l) => l.evt).join(", ")}`);
});
