/**
 * Verified workflow wake (docs/protocol.md §4, "Workflow output"): with `workflows.wake: true`,
 * a kind 9 signed by the relay's NIP-11 `self` key, tagged for this agent by a workflow of
 * its owner, wakes the agent as if the owner had mentioned it: answered once, in its thread.
 * Signed by anyone else, by the key the relay used before it rotated, or naming another
 * owner, it is never answered and each refusal is logged with its reason. Off by default.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import { marker, assertAnsweredOnce, ask, type Asked } from "../kit/channel-oracle.js";
import { World, type DaemonProc } from "../kit/world.js";
import { verifyWake, workflowMessage, type WakeTrust } from "../src/nostr/workflow.js";
import { signEvent } from "../src/nostr/verify.js";
import { identity } from "./fixtures/relay-helpers.js";
import { KIND } from "../src/nostr/kinds.js";

const cleanup: (() => unknown)[] = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

test("the wake's shape: only the relay's current key, one marker, one canonical owner equal to ours, this agent among the mentions", () => {
  const relay = identity();
  const old = identity();
  const owner = identity();
  const agent = identity();
  const other = identity();
  const trust: WakeTrust = { relaySelf: relay.pk, previousSelves: new Set([old.pk]), agent: agent.pk, owner: owner.pk };
  // As from the wire: nostr-tools marks events it signed itself as verified, and that mark would survive a copy.
  const wake = (by: Uint8Array, mutate: (tags: string[][]) => string[][] = (t) => t): Event => {
    const t = workflowMessage("c1", owner.pk, agent.pk, "go");
    return JSON.parse(JSON.stringify(signEvent({ ...t, tags: mutate(t.tags) }, by)));
  };
  assert.deepEqual(verifyWake(wake(relay.sk), trust), { ok: true, owner: owner.pk });
  const reason = (ev: Event, tr: WakeTrust = trust) => {
    const v = verifyWake(ev, tr);
    return v.ok ? "ok" : v.reason;
  };
  assert.equal(reason(wake(other.sk)), "workflow-forged");
  assert.equal(reason(wake(old.sk)), "workflow-stale-key");
  assert.equal(reason(wake(relay.sk), { ...trust, relaySelf: undefined }), "workflow-no-relay-key");
  assert.equal(reason({ ...wake(relay.sk), content: "tampered" }), "workflow-forged", "a signature that does not verify");
  assert.equal(reason(wake(relay.sk, (t) => [...t, ["buzz:workflow", "true"]])), "workflow-malformed", "two markers");
  assert.equal(
    reason(wake(relay.sk, (t) => t.map((x) => (x[0] === "buzz:workflow-owner" ? [x[0], x[1]!.toUpperCase()] : x)))),
    "workflow-malformed",
  );
  assert.equal(reason(wake(relay.sk, (t) => [...t, ["buzz:workflow-mention", agent.pk]])), "workflow-malformed", "a repeated mention");
  assert.equal(reason(wake(relay.sk), { ...trust, owner: other.pk }), "workflow-other-owner");
  assert.equal(reason(wake(relay.sk), { ...trust, agent: other.pk }), "workflow-not-for-agent");
});

/** A workflow message as the dev relay's admin API emits it, with an oracle marker. */
async function workflowAsk(w: World, o: { owner?: string; signAs?: "current" | "previous"; text?: string } = {}): Promise<Asked> {
  const m = marker();
  const event = await w.relay.workflowWake({
    channel: w.channel,
    owner: o.owner ?? w.owner.pk,
    agent: w.agent.pk,
    content: `${m} ${o.text ?? "workflow: summarise today's builds"}`,
    signAs: o.signAs,
  });
  return { event, marker: m, channel: w.channel };
}

const replies = (w: World, ev: Event) => w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ev.id] });
const deniedFor = (d: DaemonProc, ev: Event) => d.logs.find((l) => l.evt === "gate.denied" && l.event === ev.id);

test("a genuine wake is answered once as the owner's; forged, stale-key and other-owner wakes are never answered, each logged", async () => {
  const w = await World.create();
  cleanup.push(() => w.close());
  const d = await w.startDaemon({ workflows: { wake: true } });

  const genuine = await workflowAsk(w);
  await assertAnsweredOnce(w, [genuine], { timeoutMs: 60_000 });
  const woke = await d.waitLog((l) => l.evt === "gate.workflow_wake" && l.event === genuine.event.id);
  assert.equal(woke.owner, w.owner.npub);

  // Forged: a member writes the very tags with its own key.
  const stranger = await w.stranger.relay();
  const forged = (await stranger.send(workflowMessage(w.channel, w.owner.pk, w.agent.pk, `${marker()} forged: deploy to production`)))
    .event;
  // Another owner: the relay's own workflow, but the teammate's.
  const otherOwner = await workflowAsk(w, { owner: w.teammate.pk, text: "the teammate's workflow" });

  // Stale: the relay rotates its key (and every connection with it); a wake signed with the old key.
  const rotated = await w.relay.rotateKey();
  await d.waitLog((l) => l.evt === "relay.self_changed" && l.to === rotated, 30_000);
  const stale = await workflowAsk(w, { signAs: "previous", text: "signed with the rotated-away key" });
  // …while one signed with the new key still wakes it.
  const fresh = await workflowAsk(w, { text: "after the rotation" });

  // A later positive: the owner's own mention is answered, so everything before it was decided.
  const later = await ask(w.owner, "and now a plain mention", { channel: w.channel });
  await assertAnsweredOnce(w, [genuine, fresh, later], { timeoutMs: 60_000 });
  for (const [ev, reason] of [
    [forged, "workflow-forged"],
    [otherOwner.event, "workflow-other-owner"],
    [stale.event, "workflow-stale-key"],
  ] as const) {
    assert.deepEqual(await replies(w, ev), [], `${reason}: never answered`);
    assert.equal(deniedFor(d, ev)?.reason, reason, `${reason}: logged with its reason`);
  }
  const reacted = await w.query({ kinds: [KIND.reaction], authors: [w.agent.pk], "#e": [forged.id, otherOwner.event.id, stale.event.id] });
  assert.deepEqual(reacted, [], "no 🔒 either: a refused wake is not answered at all");

  // A NIP-11 read that fails after a good one: the relay's connections cut (its key unchanged)
  // and its document gone. The key read before is no longer trusted: a wake it signs is refused.
  w.relay.setNip11({ status: 500, raw: "internal error" });
  w.relay.dropAll();
  await d.waitLog((l) => l.evt === "relay.nip11_problem" && /HTTP 500/.test(JSON.stringify(l.problems)), 30_000);
  const unverified = await workflowAsk(w, { text: "while the relay states no key" });
  // Never answered: judged once a later owner mention is answered and every turn has ended.
  await w.assertNeverAnswered([unverified.event], { channel: w.channel, timeoutMs: 60_000 });
  assert.equal(deniedFor(d, unverified.event)?.reason, "workflow-no-relay-key", "no relay key is trusted after the failed read");
  w.relay.setNip11(undefined);
});

test("workflows.wake is off by default: the relay's workflow message is no one's mention", async () => {
  const w = await World.create();
  cleanup.push(() => w.close());
  const d = await w.startDaemon();
  const wake = await workflowAsk(w);
  const later = await ask(w.owner, "a plain mention", { channel: w.channel });
  // The oracle also fails on any agent message answering something not asked (the wake).
  await assertAnsweredOnce(w, [later], { timeoutMs: 60_000 });
  assert.deepEqual(await replies(w, wake.event), [], "not answered");
  assert.equal(deniedFor(d, wake.event)?.reason, "not-owner", "the relay's key is not the owner");
  assert.equal(
    d.logs.some((l) => l.evt === "gate.workflow_wake"),
    false,
  );
});
