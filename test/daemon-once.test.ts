/**
 * What the channel shows once stays shown once across a restart. After a restart the relay
 * sends again what it sent in the seconds before the resubscribe cursor (docs/protocol.md
 * §5), and a turn that was running runs again: a stranger's already-denied message must not
 * get a second 🔒 (nor a second `gate.denied` line), and a mention whose turn runs again must
 * not get a second 👀. Judged from the channel, with a later owner mention answered first so
 * that "never" is seen after something that does happen.
 *
 * Both tests share one world and one daemon (on one state directory): each restarts the
 * daemon it finds running, in a channel of its own, so it passes alone and in either order;
 * only one daemon start is saved, the restarts being the point.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { World, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";

let w: World;
let configFile: string;
/** The daemon now running: started by `before`, replaced by each test's restart. */
let running: DaemonProc;
before(async () => {
  w = await World.create();
  // The owner-only policy with 🔒 is the denial test's; the 1 s grace the interrupted turn's.
  configFile = w.writeConfig({
    defaults: { respond_to: "owner-only", on_denied: "react" },
    shutdown_grace: "1s",
    relay: { presence: false },
  });
  running = await w.startDaemon({}, { configFile });
});
after(() => w.close());

const reactions = async (ev: Event, emoji: string) =>
  (await w.query({ kinds: [KIND.reaction], authors: [w.agent.pk], "#e": [ev.id] })).filter((r) => r.content === emoji);

test("a stranger's denied message replayed after a restart gets no second 🔒 and no second gate.denied", { timeout: 60_000 }, async () => {
  const channel = await w.addChannel({ name: "denied-room" });
  const first = running;
  const denied = await w.stranger.post("@agent please deploy", { channel });
  await w.waitReaction(denied, "🔒");
  await first.waitLog((l) => l.evt === "gate.denied" && l.event === denied.id);
  assert.equal(await first.stop(), 0);

  // Restarted within the relay's replay window (cursor − 5 s): the denied message comes again.
  const again = (running = await w.startDaemon({}, { configFile }));
  const later = await w.owner.post("@agent are you there?", { channel });
  await w.waitReplies(later);
  assert.equal((await reactions(denied, "🔒")).length, 1, "one 🔒 in the channel");
  assert.deepEqual(
    again.logs.filter((l) => l.evt === "gate.denied" && l.event === denied.id),
    [],
    "the replayed denial is not reported again",
  );
  assert.ok(
    again.logs.some((l) => l.evt === "gate.denied_replayed" && l.event === denied.id),
    "the relay did send it again (seen at debug)",
  );
});

test("a turn interrupted by a restart runs again without a second 👀 on its mention; answered once", { timeout: 60_000 }, async () => {
  const channel = await w.addChannel({ name: "restart-room" });
  const first = running;
  // Held past the SIGTERM; let go before the restart, so the turn that runs again can end.
  const release = join(w.dir, "release-restart");
  const ev = await w.owner.post(`@agent #hold ${release} summarise the incident`, { channel });
  await w.waitReaction(ev, "👀");
  assert.equal(await first.stop("SIGTERM"), 0);
  assert.equal(first.logs.find((l) => l.evt === "daemon.turns_requeued")?.count, 1, "the turn was left to run again");
  writeFileSync(release, "");

  const again = (running = await w.startDaemon({}, { configFile }));
  await w.waitReaction(ev, "✅", 30_000);
  assert.ok(
    again.logs.some((l) => l.evt === "turn.end" && l.status === "answered" && (l.events as string[] | undefined)?.includes(ev.id)),
    "it ran again",
  );
  const later = await w.owner.post("@agent and now?", { channel });
  await w.waitReplies(later);
  assert.equal((await w.waitReplies(ev)).length, 1, "answered once");
  assert.equal((await reactions(ev, "👀")).length, 1, "one 👀 on the mention");
  assert.equal((await reactions(later, "👀")).length, 1, "a new mention still gets its 👀");
});
