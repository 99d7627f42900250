/**
 * A publish the relay keeps refusing with `OK false "rate-limited: …"` (docs/protocol.md §5
 * "Pacing"), judged at the relay's side of the socket (a frame proxy between the client and
 * the dev relay): each re-send of the same event comes only after the relay's stated pause,
 * and once the give-up bound (`rateLimitedMaxMs`) has passed the client stops, reporting the
 * refusal — no frame after it.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startFrameProxy } from "../../kit/frame-proxy.js";
import { waitFor } from "../../kit/wait.js";
import { KIND } from "../../src/nostr/kinds.js";
import { client, identity, relayWith } from "../fixtures/relay-helpers.js";

const cleanup: (() => unknown)[] = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

test("OK-false rate-limited: re-sent only after the relay's pause each time, and given up once rateLimitedMaxMs has passed", async () => {
  const me = identity();
  const relay = await relayWith([me], { noLimits: true });
  cleanup.push(() => relay.close());
  const ch = await relay.createChannel({ name: "limited", members: [me.pk] });
  let target: string | undefined;
  const refusedAt: number[] = [];
  const proxy = await startFrameProxy(relay.url, {
    intercept: (f, answer) => {
      const ev = f[0] === "EVENT" ? (f[1] as { id: string; kind: number }) : undefined;
      if (!ev || ev.kind !== KIND.message || (target && ev.id !== target)) return false;
      target = ev.id;
      refusedAt.push(Date.now());
      answer(["OK", ev.id, false, "rate-limited: retry in 1s"]);
      return true;
    },
  });
  cleanup.push(() => proxy.close());
  const pauseMs = 1000; // the relay's "retry in 1s"; the client adds 0–20 % on top
  const maxMs = 2500;
  const c = client(proxy, me, {
    readRelayInfo: false,
    publish: { retryBaseMs: 50, reconnectWaitMs: 10_000, rateLimitedMaxMs: maxMs },
  });
  cleanup.push(() => c.stop());
  await c.start();
  assert.equal(await c.waitAuthenticated(10_000), true);

  // A client that ignored the bound would re-send for ever: stop looking once it has plainly passed it.
  const bound = 1 + Math.floor(maxMs / pauseMs) + 1;
  const sent = c.send({ kind: KIND.message, created_at: Math.floor(Date.now() / 1000), content: "hold on", tags: [["h", ch]] });
  let returned = false;
  void sent.finally(() => (returned = true));
  // One wait for whichever comes first, and nothing left polling once it came.
  const first = await waitFor(() => (refusedAt.length > bound + 1 ? "ran past" : returned && "returned"), {
    timeoutMs: 60_000,
    what: "the publish to return or re-send past the bound",
  });
  assert.equal(first, "returned", `the publish gave up (the relay saw ${refusedAt.length} sends)`);
  const { event, outcome } = await sent;
  assert.equal(event.id, target);

  const sends = proxy.sent.filter((f) => f.type === "EVENT" && f.id === target).length;
  assert.equal(sends, refusedAt.length, "every send of the event reached the relay and was refused");
  assert.ok(sends >= 2, "it was re-sent after the pause at least once");
  assert.ok(sends <= bound, `no more sends than the bound allows (${sends} > ${bound})`);
  for (let i = 1; i < refusedAt.length; i++)
    assert.ok(
      refusedAt[i]! - refusedAt[i - 1]! >= pauseMs,
      `send ${i + 1} came ${refusedAt[i]! - refusedAt[i - 1]!} ms after the refusal before it`,
    );
  assert.equal(outcome.status, "refused");
  assert.match(outcome.reason ?? "", /^rate-limited:/);
  assert.equal(outcome.rateLimited, sends, "the outcome counts the refused sends");

  // Given up for good: a later publish goes through, and the refused event is never sent again.
  target = "given-up";
  const later = await c.send({ kind: KIND.message, created_at: Math.floor(Date.now() / 1000), content: "later", tags: [["h", ch]] });
  assert.equal(later.outcome.status, "accepted");
  assert.equal(proxy.sent.filter((f) => f.type === "EVENT" && f.id === event.id).length, sends, "no send after giving up");
});
