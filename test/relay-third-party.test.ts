/**
 * The bridge on a relay this project did not write (@nostr-relay/core from npm, NIP-42 on):
 * no HTTP bridge and no NIP-29 state, so reads go over the WebSocket (one info line says so),
 * the channel named by id in the config is listened in with membership unknown, and a mention
 * there is answered in its thread.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import type { Event } from "nostr-tools";
import { createLogger } from "../src/base/log.js";
import { message } from "../src/nostr/events.js";
import { RelayClient } from "../src/relay/index.js";
import { startThirdPartyRelay } from "./fixtures/third-party-relay.js";
import { World } from "../kit/world.js";
import { sleep, waitFor } from "../kit/wait.js";

const cleanup: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

test("on a plain NIP-42 relay from npm, a mention in a channel named by id is answered in its thread", async () => {
  const relay = await startThirdPartyRelay();
  const w = await World.create();
  cleanup.push(
    () => w.close(),
    () => relay.close(),
  );
  const channel = randomUUID();
  const d = await w.startDaemon({ relay: { url: relay.url }, channels: [{ id: channel }] });

  const wsLine = await d.waitLog((l) => l.evt === "relay.reads_over_websocket");
  assert.equal(wsLine.level, "info");
  const unknown = await d.waitLog((l) => l.evt === "relay.channel_state_unknown");
  assert.equal(unknown.channel, channel);
  const started = await d.waitLog((l) => l.evt === "daemon.started");
  assert.deepEqual(
    (started.channels as { id: string }[]).map((c) => c.id),
    [channel],
    "the configured channel is listened in",
  );

  const owner = new RelayClient({ url: relay.url, secretKey: w.owner.sk, logger: createLogger({ level: "silent" }) });
  cleanup.push(() => owner.stop());
  await owner.start();
  assert.equal(await owner.waitAuthenticated(10_000), true, "NIP-42 with the third-party relay");
  const { event: mention, outcome } = await owner.send(message(channel, "@agent hello from elsewhere", { mentions: [w.agent.pk] }));
  assert.equal(outcome.status, "accepted");

  const reply = await waitFor(
    () =>
      relay.stored().find((e: Event) => e.pubkey === w.agent.pk && e.kind === 9 && e.tags.some((t) => t[0] === "e" && t[1] === mention.id)),
    { timeoutMs: 30_000, intervalMs: 100, what: "the agent's reply" },
  );
  assert.equal(reply.tags.find((t) => t[0] === "h")?.[1], channel, "in the same channel");
  await sleep(1000); // a second reply would be stored by now
  const replies = relay
    .stored()
    .filter((e: Event) => e.pubkey === w.agent.pk && e.kind === 9 && e.tags.some((t) => t[0] === "e" && t[1] === mention.id));
  assert.equal(replies.length, 1, "answered once");
  assert.equal(d.logs.filter((l) => l.evt === "relay.reads_over_websocket").length, 1, "the switch is logged once");
});
