/**
 * The small rules that used to sit inside the daemon's wiring: which sessions a `!rotate`
 * ends, how a gate decision is counted, how old channel metadata may be before a turn
 * re-reads it, and how many denials the status page keeps.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { rotationScope } from "../../src/intake/control-actions.js";
import { decisionLabel } from "../../src/intake/intake.js";
import { FreshChannels } from "../../src/buzz/fresh-channel.js";
import { RecentDenials } from "../../src/app/daemon/daemon-status.js";
import type { ChannelInfo } from "../../src/buzz/directory.js";
import type { Decision } from "../../src/gate/index.js";

test("!rotate in a thread ends that thread's session only; top-level, the channel's and every thread's in it", () => {
  const inThread = rotationScope({ channel: "ch", thread: "root1" });
  assert.deepEqual(["ch", "ch/root1", "ch/root2", "other/root1"].filter(inThread), ["ch/root1"]);
  const topLevel = rotationScope({ channel: "ch" });
  assert.deepEqual(["ch", "ch/root1", "ch/root2", "chx", "chx/root1", "other"].filter(topLevel), ["ch", "ch/root1", "ch/root2"]);
});

test("a gate decision is counted under its reason, command, amendment, or accepted/sibling", () => {
  const channel: ChannelInfo = { id: "ch", name: "n", about: "", type: "stream", archived: false };
  const policy = {} as Extract<Decision, { action: "accept" }>["policy"];
  assert.equal(decisionLabel({ action: "drop", reason: "no-mention", level: "info" }), "no-mention");
  assert.equal(decisionLabel({ action: "deny", reason: "bad-signature", level: "info" }), "bad-signature");
  assert.equal(
    decisionLabel({ action: "control", command: "!cancel" as Extract<Decision, { action: "control" }>["command"], channel }),
    "!cancel",
  );
  assert.equal(decisionLabel({ action: "amend", amend: "edit", targets: ["e"], channel, policy }), "edit");
  assert.equal(decisionLabel({ action: "accept", channel, policy }), "accepted");
  assert.equal(
    decisionLabel({ action: "accept", channel, policy, sibling: {} as NonNullable<Extract<Decision, { action: "accept" }>["sibling"]> }),
    "sibling",
  );
});

test("channel metadata is re-read once it is older than the TTL; a failed or archived read keeps what the directory knew", async (t) => {
  // The clock is the test's (mock Date): "within the TTL" must not depend on the machine's load.
  t.mock.timers.enable({ apis: ["Date"], now: 1_000_000 });
  const known: ChannelInfo = { id: "ch", name: "old", about: "before", type: "stream", archived: false };
  let reads = 0;
  let next: ChannelInfo | Error = { ...known, about: "after" };
  const directory = {
    get: (id: string) => (id === "ch" ? known : undefined),
    refresh: async () => {
      reads++;
      if (next instanceof Error) throw next;
      return next;
    },
  };
  const fresh = new FreshChannels(directory, 40);
  assert.equal((await fresh.get("ch"))?.about, "after", "never read: read now");
  assert.equal((await fresh.get("ch"))?.about, "before", "read within the TTL: the directory's copy");
  assert.equal(reads, 1);
  assert.equal(await fresh.get("nope"), undefined);
  assert.equal(reads, 1, "an unknown channel is not read");
  t.mock.timers.tick(50);
  next = new Error("relay down");
  assert.equal((await fresh.get("ch"))?.about, "before");
  t.mock.timers.tick(50);
  next = { ...known, about: "archived", archived: true };
  assert.equal((await fresh.get("ch"))?.about, "before");
  assert.equal(reads, 3);
});

test("the status page keeps the last 20 denials, newest first", () => {
  const d = new RecentDenials();
  for (let i = 0; i < 25; i++) d.add({ at: i, author: `a${i}`, reason: "not-allowed" });
  const list = d.newestFirst();
  assert.equal(list.length, 20);
  assert.equal(list[0]?.at, 24);
  assert.equal(list[19]?.at, 5);
});
