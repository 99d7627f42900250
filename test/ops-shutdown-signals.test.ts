/**
 * A turn cut short by SIGTERM is not a failure: it runs again after the restart. So the
 * mention gets no ⚠️ (which would stay beside the later ✅), the cancel is logged as the
 * shutdown it is, and after the restart the thread shows 👀 and ✅ only.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { KIND } from "../src/nostr/kinds.js";
import { World } from "../kit/world.js";

let w: World;
before(async () => {
  w = await World.create();
});
after(() => w.close());

test("SIGTERM mid-turn: no ⚠️, the cancel logged with reason shutdown; after restart ✅ stands alone", async () => {
  const file = w.writeConfig({ shutdown_grace: "1s", relay: { presence: false } }, "term.yaml");
  const first = await w.startDaemon({}, { configFile: file });
  // Held past the SIGTERM; let go before the restart, so the turn that runs again can end.
  const release = join(w.dir, "release-term");
  const ev = await w.owner.post(`@agent #hold ${release} take your time`);
  await w.waitReaction(ev, "👀");
  assert.equal(await first.stop("SIGTERM"), 0);
  const cancels = first.logs.filter((l) => l.evt === "agent.turn_cancel");
  assert.ok(cancels.length >= 1, first.raw().slice(-3000));
  assert.deepEqual([...new Set(cancels.map((l) => l.reason))], ["shutdown"]);
  const before = await w.query({ kinds: [KIND.reaction], authors: [w.agent.pk], "#e": [ev.id] });
  assert.deepEqual(
    before.map((r) => r.content).filter((c) => c !== "👀"),
    [],
    "nothing but 👀 while it waits for the restart",
  );

  writeFileSync(release, "");
  const second = await w.startDaemon({}, { configFile: file });
  await w.waitReply(ev, 60_000);
  await w.waitReaction(ev, "✅");
  const after = await w.query({ kinds: [KIND.reaction], authors: [w.agent.pk], "#e": [ev.id] });
  assert.deepEqual([...new Set(after.map((r) => r.content))].sort(), ["✅", "👀"].sort());
  assert.equal(await second.stop(), 0);
});
