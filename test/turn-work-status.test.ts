/**
 * The agent's public work status (NIP-AW, kind 30181, docs/protocol.md §4) through a daemon and a
 * relay (the board's rules in-process: test/unit/work-status-board.test.ts): channel members see
 * what the agent is doing — status, model, turn, at most 20 tool titles of at most 160
 * characters with paths under the state directory, secrets and credentials in URLs removed —
 * republished at most every 5 s, cleared when the turn ends, and never published in a channel
 * set to `work_status: off`.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { nip19 } from "nostr-tools";
import { World } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";

const cleanup: (() => unknown)[] = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

test("a channel's members see the agent working with its tool titles, and the status cleared when the turn ends; work_status: off publishes none", async () => {
  const w = await World.create();
  cleanup.push(() => w.close());
  const quiet = await w.addChannel({ name: "quiet" });
  const d = await w.startDaemon({ channels: [{ id: "*" }, { id: quiet, work_status: "off" }], http: { listen: "127.0.0.1:0" } });
  // The status page links each channel's status (and shows the relay's NIP-11 key); not the quiet room's.
  const page = await (await fetch(`${String((await d.waitLog((l) => l.evt === "daemon.started")).http)}/status`)).text();
  const links = [...page.matchAll(/href="nostr:(naddr1[0-9a-z]+)"/g)].map((m) => nip19.decode(m[1]!).data as nip19.AddressPointer);
  assert.deepEqual(
    links.map((a) => [a.kind, a.pubkey, a.identifier]),
    [[KIND.workStatus, w.agent.pk, w.channel]],
  );
  assert.ok(page.includes(w.relay.relayPubkey), "the relay's key (NIP-11 self) is on the page");
  const status = { kinds: [KIND.workStatus], authors: [w.agent.pk], "#d": [w.channel] };
  // A progress note through send_message, then 7 s of work: the 5 s snapshot shows the tool.
  const asked = await w.owner.post("@agent #progress #slow 7000 show your work");
  const working = await w.waitEvents(
    status,
    (evs) => evs.some((e) => JSON.parse(e.content).activity?.some((a: { title: string }) => a.title === "send_message")),
    30_000,
  );
  const live = JSON.parse(working[0]!.content);
  assert.equal(live.status, "working");
  assert.equal(live.v, 1);
  assert.deepEqual(working[0]!.tags, [
    ["h", w.channel],
    ["d", w.channel],
  ]);
  await w.waitReplies(asked, 2, 30_000);
  const cleared = await w.waitEvents(status, (evs) => evs.length === 1 && JSON.parse(evs[0]!.content).status === "complete", 20_000);
  assert.deepEqual(JSON.parse(cleared[0]!.content).activity, [], "cleared at turn end");

  // The quiet channel: a turn runs to its end and no status is ever published there. A later
  // turn in the first channel publishes and clears its own status first, so a quiet-room
  // status queued before it would be stored by then.
  const q = await w.owner.post("@agent #progress in the quiet room", { channel: quiet });
  await w.waitReplies(q, 2, 30_000);
  const later = await w.owner.post("@agent once more");
  await w.waitReplies(later, 1, 30_000);
  const before = JSON.parse(cleared[0]!.content).turnId;
  await w.waitEvents(
    status,
    (evs) => evs.length === 1 && JSON.parse(evs[0]!.content).turnId !== before && JSON.parse(evs[0]!.content).status === "complete",
    20_000,
  );
  assert.deepEqual(await w.query({ kinds: [KIND.workStatus], authors: [w.agent.pk], "#d": [quiet] }), [], "work_status: off");
});
