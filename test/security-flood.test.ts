/**
 * An agent told to flood (docs/security.md): one enormous send_message, or many at once.
 * The real daemon, dev relay, demo agent (`#burst`) and proxy: the oversized message is
 * refused with a tool error naming `replies.max_bytes` before it reaches the daemon, a
 * turn's send_message calls beyond `replies.max_per_turn` are refused with an error the
 * agent sees, and another channel's mention is taken in and answered meanwhile. How long
 * things take is `npm run bench`'s business (bench/flood.ts); here only what happened, and
 * in which order.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { finalizeEvent, generateSecretKey, getPublicKey, type Event } from "nostr-tools";
import { startDevRelay } from "../src/devrelay/index.js";
import { silentLogger } from "../src/base/log.js";
import type { RelayPort } from "../src/relay/port.js";
import { LinkServer } from "../src/link/index.js";
import { createBuzzTools } from "../src/turn/buzz-tool-handlers.js";
import { LinkClient } from "../src/link/client.js";
import { RawClient } from "../kit/raw-client.js";
import { World, type DaemonProc } from "../kit/world.js";
import { assertAnsweredOnce, marker } from "../kit/channel-oracle.js";
import { KIND } from "../src/nostr/kinds.js";

let w: World;
let d: DaemonProc;
let ch: { big: string; bigOther: string; many: string; manyOther: string };

before(async () => {
  w = await World.create({ channelName: "flood-room" });
  ch = {
    big: w.channel,
    bigOther: await w.addChannel({ name: "big-other" }),
    many: await w.addChannel({ name: "many-room" }),
    manyOther: await w.addChannel({ name: "many-other" }),
  };
  d = await w.startDaemon({ relay: { presence: false }, replies: { max_per_turn: 5 } });
});
after(() => w.close());

const index = (pred: (l: Record<string, unknown>) => boolean) => d.logs.findIndex(pred);

test("a 20 MiB send_message: refused naming replies.max_bytes, nothing of it posted; another channel's mention is taken in meanwhile", async () => {
  const m = marker();
  const big = await w.owner.post(`@agent ${m} #burst 1 20971520`, { channel: ch.big });
  await d.waitLog((l) => l.evt === "gate.accepted" && l.event === big.id);
  const m2 = marker();
  const other = await w.owner.post(`@agent ${m2} are you there?`, { channel: ch.bigOther });

  await assertAnsweredOnce(
    w,
    [
      { event: big, marker: m, channel: ch.big },
      { event: other, marker: m2, channel: ch.bigOther },
    ],
    { timeoutMs: 90_000 },
  );
  const [reply] = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [big.id] });
  assert.match(
    reply!.content,
    /^burst: 0 sent, 1 refused; first: (?:error: )?send_message failed: content is 20971520 bytes; one message takes at most 262144 bytes \(256KiB, the bridge's replies\.max_bytes\)/m,
  );
  const bigEnd = await d.waitLog((l) => l.evt === "turn.end" && String(l.scope).startsWith(ch.big));
  assert.equal(bigEnd.published, 1, "the flooding turn posted its one reply, no part of the 20 MiB");
  assert.ok(
    index((l) => l.evt === "gate.accepted" && l.event === other.id) < index((l) => l === bigEnd),
    "the other channel's mention was accepted while the flooding turn still ran",
  );
});

test("30 send_message calls at once with replies.max_per_turn 5: five are posted, the rest refused with an error the agent sees", async () => {
  const ask = await w.owner.post("@agent #burst 30", { channel: ch.many });
  // The first burst message is out: the other channel's mention arrives while the turn publishes.
  await w.waitEvents({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ask.id] }, (e) => e.length >= 1, 30_000);
  const other = await w.owner.post("@agent and me?", { channel: ch.manyOther });
  await w.waitReaction(ask, "✅", 60_000);
  await w.waitReaction(other, "✅", 60_000);

  const posted: Event[] = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ask.id] });
  assert.equal(posted.length, 5, `posted: ${posted.map((e) => e.content.slice(0, 20)).join(" | ")}`);
  assert.ok(posted.every((e) => /^burst \d+\/30/.test(e.content)));
  // The demo agent's own reply came after the 30 and is the 31st call: refused as well.
  const refused = d.logs.filter((l) => l.evt === "link.tool_failed" && String(l.session).startsWith(ch.many));
  assert.equal(refused.length, 26);
  for (const l of refused)
    assert.match(
      String(l.error),
      /this turn has already sent 5 messages, the most one turn may send \(the bridge's replies\.max_per_turn\)/,
    );
  const answers = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [other.id] });
  // Five posts and 25 refusals take milliseconds: whether the other mention lands before
  // the flooding turn ends is a race, so only its one answer is judged here (the 20 MiB
  // case above, whose turn lasts, judges the order).
  assert.equal(answers.length, 1, "the other channel's mention is answered once");
});

test("the daemon holds the same limits for a client that talks to the link itself, past the proxy", async () => {
  const relay = await startDevRelay();
  const home = mkdtempSync(join(tmpdir(), "bb-flood-link-"));
  const link = new LinkServer({ socketPath: join(home, "link.sock"), logger: silentLogger() });
  const published: Event[] = [];
  try {
    const sk = generateSecretKey();
    const channel = await relay.createChannel({ name: "general", members: [getPublicKey(sk)] });
    const rc = await RawClient.authed(relay.url, sk);
    const port: RelayPort = {
      sign: (t) => finalizeEvent(t, sk),
      publish: async (ev) => ((await rc.publish(ev))[2] === true ? { status: "accepted" } : { status: "refused" }),
      query: async (f) => (await rc.req(`q${published.length}`, ...f)).events,
    };
    await link.start();
    const session = link.register({
      sessionKey: "rogue",
      manifest: { servers: [], hook_deadline: 2000, list_timeout: 15000 },
      tools: createBuzzTools({ channel, relay: port, maxBytes: 1024, maxUnbound: 2, onPublished: (ev) => published.push(ev) }),
    });
    const client = await LinkClient.connect(session.env.BUZZ_BRIDGE_LINK!, session.env.BUZZ_BRIDGE_LINK_TOKEN!);
    try {
      await assert.rejects(
        client.callBuzzTool("send_message", { content: "x".repeat(1025) }),
        /content is 1025 bytes; one message takes at most 1024 bytes \(1KiB, the bridge's replies\.max_bytes\)/,
      );
      assert.equal(published.length, 0, "nothing of it was published");
      // No turn bound: the same allowance holds between turns.
      await client.callBuzzTool("send_message", { content: "one" });
      await client.callBuzzTool("send_message", { content: "two" });
      await assert.rejects(client.callBuzzTool("send_message", { content: "three" }), /already sent 2 messages/);
      assert.deepEqual(
        published.map((e) => e.content),
        ["one", "two"],
      );
    } finally {
      client.close();
    }
    rc.ws.close();
  } finally {
    await link.stop();
    await relay.close();
    rmSync(home, { recursive: true, force: true });
  }
});
