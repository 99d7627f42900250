/**
 * Every publish of the daemon leaves through its one publisher (relay/publisher.ts), so
 * `buzz_bridge_publish_total{kind,status}` and the `publish.done` log lines count what is
 * on the relay: the agent's own `send_message` and `add_reaction`, the bridge's final-text
 * fallback and its ✅ reactions alike. Judged against the channel as the relay holds it.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { World, type DaemonProc } from "../kit/world.js";
import { waitFor } from "../kit/wait.js";
import { KIND } from "../src/nostr/kinds.js";

let w: World | undefined;
after(() => w?.close());

async function scrape(d: DaemonProc): Promise<string> {
  const base = String(d.logs.find((l) => l.evt === "daemon.started")?.http);
  return (await fetch(`${base}/metrics`)).text();
}

/** The counter's value for one label set; 0 when the series does not exist (yet). */
function publishes(text: string, kind: number, status: string): number {
  const m = text.match(new RegExp(`^buzz_bridge_publish_total\\{kind="${kind}",status="${status}"\\} (\\d+)$`, "m"));
  return m ? Number(m[1]) : 0;
}

const turnEnd = (d: DaemonProc, mention: string) =>
  d.waitLog((l) => l.evt === "turn.end" && Array.isArray(l.events) && l.events.includes(mention), 60_000);

test("publish_total and publish.done count the agent's own replies and reactions and the bridge's fallback, as the relay holds them", {
  timeout: 120_000,
}, async () => {
  w = await World.create({ channelName: "publish-metrics-room" });
  const d = await w.startDaemon({ http: { listen: "127.0.0.1:0" }, relay: { presence: false } });

  // The agent answers with its own send_message.
  const viaTool = await w.owner.post("@agent what is the release date?");
  assert.equal((await turnEnd(d, viaTool.id)).via, "tool");
  // The agent only writes final text: the bridge posts it.
  const viaFinal = await w.owner.post("@agent #final-only summarise the notes");
  assert.equal((await turnEnd(d, viaFinal.id)).via, "fallback");
  // The agent reacts with its own add_reaction, then answers.
  const react = await w.owner.post(`@agent #tool add_reaction ${JSON.stringify({ event_id: viaTool.id, emoji: "🎉" })}`);
  await turnEnd(d, react.id);
  await w.waitReaction(viaTool, "🎉");
  for (const ev of [viaTool, viaFinal, react]) await w.waitReaction(ev, "✅");

  const onRelay = async (kind: number) => w!.query({ kinds: [kind], authors: [w!.agent.pk], "#h": [w!.channel] });
  const messages = await onRelay(KIND.message);
  const reactions = await onRelay(KIND.reaction);
  assert.equal(messages.length, 3, "one answer per mention");
  const on = (ev: { id: string }) =>
    reactions
      .filter((r) => r.tags.some((t) => t[0] === "e" && t[1] === ev.id))
      .map((r) => r.content)
      .sort();
  assert.deepEqual(on(viaTool), ["✅", "🎉", "👀"].sort(), "the bridge's 👀 and ✅, and the agent's own 🎉");
  assert.deepEqual(on(viaFinal), ["✅", "👀"].sort());
  assert.deepEqual(on(react), ["✅", "👀"].sort());
  assert.equal(reactions.length, 7);

  // ✅ is fire-and-forget: its outcome is counted once the relay's OK is back.
  const done = (id: string) => d.logs.find((l) => l.evt === "publish.done" && l.id === id);
  await waitFor(() => [...messages, ...reactions].every((ev) => done(ev.id)), {
    timeoutMs: 10_000,
    what: "a publish.done line for each of the agent's messages and reactions",
  });
  for (const ev of [...messages, ...reactions]) {
    const line = done(ev.id)!;
    assert.equal(line.kind, ev.kind);
    assert.equal(line.status, "accepted");
    assert.equal(line.level, "info", "replies and reactions are not routine traffic");
  }

  const text = await scrape(d);
  assert.equal(publishes(text, KIND.message, "accepted"), messages.length, "kind 9 publishes counted = the agent's messages on the relay");
  assert.equal(publishes(text, KIND.reaction, "accepted"), reactions.length, "kind 7 publishes counted = its reactions on the relay");
  const doneOf = (kind: number) => d.logs.filter((l) => l.evt === "publish.done" && l.kind === kind);
  assert.equal(doneOf(KIND.message).length, messages.length, "one publish.done per message");
  assert.equal(doneOf(KIND.reaction).length, reactions.length, "one publish.done per reaction");
  // The start-up records go the same way.
  assert.equal(publishes(text, KIND.profile, "accepted"), 1);
  assert.equal(publishes(text, KIND.agentDirectory, "accepted"), 1);
  await d.stop();
});
