/**
 * Thread participation in a fleet: two daemons of one identity on one PostgreSQL database
 * and the dev relay, both hearing every event. Once the agent is in a thread, a person's
 * reply without a mention is answered once by the fleet, not once per daemon; a reply
 * handed to someone else is answered by neither (judged after a later reply's answer). A
 * daemon that joins the fleet afterwards, with a state directory of its own, knows the
 * thread (the shared state store and the relay) and answers a bare reply there alone.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import type { World, DaemonProc } from "../kit/world.js";
import { useFleet } from "./fixtures/fleet.js";
import { KIND } from "../src/nostr/kinds.js";

let w: World;
let env: NodeJS.ProcessEnv;
let daemons: DaemonProc[] = [];
const overrides = () => ({ agent: { max_concurrent: 2, session_scope: "thread" }, log: { level: "info" } });
const fleet = useFleet({
  channels: ["fleet-participation-room"],
  setUp: async (f) => {
    w = f.w;
    if (f.skip) return;
    env = (await f.database()).env;
    daemons = await f.start(f.configs(2, overrides), env);
  },
});

const repliesTo = async (ev: Event) =>
  (await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] })).filter(
    (r) => r.tags.find((t) => t[0] === "e" && t[3] === "reply")?.[1] === ev.id,
  );

test("a bare reply in the agent's thread is answered once by a fleet of two; one handed on, by neither", async (ctx) => {
  if (fleet.skip) return ctx.skip(fleet.skip);
  const root = await w.owner.post("@agent let's plan the release");
  await w.waitThread(root, 1, { mentions: [root] });

  const bare = await w.owner.post("also: bump the version", { replyTo: root, mention: false });
  await w.waitThread(root, 2, { mentions: [bare] });
  const answers = await repliesTo(bare);
  assert.equal(answers.length, 1, "one answer from the fleet");
  assert.match(answers[0]!.content, /also: bump the version/);

  const handed = await w.owner.post("teammate, can you take this one?", { replyTo: root, mention: false, tags: [["p", w.teammate.pk]] });
  for (const d of daemons) await d.waitLog((l) => l.evt === "gate.denied" && l.event === handed.id && l.reason === "no-mention");
  const later = await w.owner.post("anything else to check?", { replyTo: root, mention: false });
  await w.waitThread(root, 3, { mentions: [later] });
  assert.equal((await repliesTo(later)).length, 1);
  assert.deepEqual(await repliesTo(handed), [], "the reply handed on was answered by neither daemon");
});

test("a daemon joining the fleet later knows the thread: it alone answers a bare reply there", async (ctx) => {
  if (fleet.skip) return ctx.skip(fleet.skip);
  const root = await w.owner.post("@agent check the nightly build");
  await w.waitThread(root, 1, { mentions: [root] });
  await Promise.all(daemons.map((d) => d.stop()));
  daemons = await fleet.start(fleet.configs(1, overrides, "joiner"), env);
  const bare = await w.owner.post("and the flaky test?", { replyTo: root, mention: false });
  await w.waitThread(root, 2, { mentions: [bare] });
  const answers = await repliesTo(bare);
  assert.equal(answers.length, 1);
  assert.match(answers[0]!.content, /and the flaky test\?/);
  await daemons[0]!.waitLog((l) => l.evt === "gate.continued" && l.event === bare.id && l.reason === "thread");
});
