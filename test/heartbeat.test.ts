/**
 * Heartbeat prompts end to end: the daemon subprocess prompts the idle demo agent on a
 * timer in a session of its own, skips ticks while a mention's turn runs or while the
 * previous heartbeat still runs, and shows each tick in its log and /metrics.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { World, type DaemonProc } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { Heartbeat } from "../src/turn/heartbeat.js";
import { createLogger } from "../src/base/log.js";

let w: World;
let d: DaemonProc;
let metricsUrl: string;
const HB_TEXT = "heartbeat-check: anything pending?";

before(async () => {
  w = await World.create();
  // The heartbeat turn itself takes 2.5 s (#slow), longer than the 1 s tick, so ticks
  // during it must be skipped as heartbeat-running.
  // One turn at a time, so a second mention waits in the queue while the first runs.
  d = await w.startDaemon({
    agent: { max_concurrent: 1 },
    heartbeat: { every: "1s", channel: w.channel, prompt: `#slow 2500 ${HB_TEXT}` },
    http: { listen: "127.0.0.1:0" },
  });
  const started = d.logs.find((l) => l.evt === "daemon.started")!;
  metricsUrl = `${String(started.http)}/metrics`;
});
after(() => w.close());

const index = (pred: (l: Record<string, unknown>) => boolean, after = -1) => d.logs.findIndex((l, i) => i > after && pred(l));

test("an idle agent is prompted: the heartbeat's answer appears top-level in heartbeat.channel", async () => {
  await d.waitLog((l) => l.evt === "heartbeat.fired");
  const [answer] = await w.waitEvents(
    { kinds: [KIND.message], authors: [w.agent.pk], "#h": [w.channel] },
    (evs) => evs.some((e) => e.content.includes(HB_TEXT)),
    30_000,
  );
  const hb = (await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#h": [w.channel] })).find((e) => e.content.includes(HB_TEXT))!;
  assert.ok(answer);
  assert.deepEqual(
    hb.tags.filter((t) => t[0] === "e"),
    [],
    "not a reply in some thread",
  );
  const end = await d.waitLog((l) => l.evt === "turn.end" && l.heartbeat === true);
  assert.equal(end.status, "answered");
  assert.match(String(end.scope), /^heartbeat:/, "its own session scope, apart from every thread");
});

test("only one heartbeat at a time: ticks while one runs are skipped as heartbeat-running", async () => {
  const fired = index((l) => l.evt === "heartbeat.fired");
  const ended = index((l) => l.evt === "turn.end" && l.heartbeat === true);
  assert.ok(fired >= 0 && ended > fired);
  const between = d.logs.slice(fired + 1, ended);
  assert.deepEqual(
    between.filter((l) => l.evt === "heartbeat.fired"),
    [],
    "no second heartbeat while the first ran",
  );
  assert.ok(
    between.some((l) => l.evt === "heartbeat.skipped" && l.reason === "heartbeat-running"),
    "the skipped ticks say why",
  );
});

test("a tick is skipped while a mention's turn runs, and heartbeats resume once the agent is idle", async () => {
  const ev = await w.owner.post("@agent #slow 6000 a long job");
  await d.waitLog((l) => l.evt === "gate.accepted" && l.event === ev.id);
  const accepted = index((l) => l.evt === "gate.accepted" && l.event === ev.id);
  const reply = await w.waitReply(ev, 30_000);
  assert.match(reply.content, /a long job/);
  await d.waitLog((l) => l.evt === "turn.end" && l.heartbeat !== true && d.logs.indexOf(l) > accepted);
  const turnEnd = index((l) => l.evt === "turn.end" && l.heartbeat !== true, accepted);
  // A heartbeat may have been running when the mention came; none may start during its turn.
  const during = d.logs.slice(accepted, turnEnd);
  assert.deepEqual(
    during.filter((l) => l.evt === "heartbeat.fired"),
    [],
    "no heartbeat fired while the mention's turn ran",
  );
  assert.ok(
    during.some((l) => l.evt === "heartbeat.skipped" && l.reason === "busy"),
    "ticks during the turn were skipped as busy",
  );
  const resumed = await d.waitLog((l) => l.evt === "heartbeat.fired" && d.logs.indexOf(l) > turnEnd, 20_000);
  assert.ok(resumed);
});

test("queued mentions go first: while a mention waits for its turn, ticks are skipped as queued", async () => {
  // Posted in one second, they run in the order they arrived: the second waits the first's 5 s.
  const first = await w.owner.post("@agent #slow 5000 first job");
  const second = await w.owner.post("@agent second job");
  await d.waitLog((l) => l.evt === "gate.accepted" && l.event === second.id);
  const accepted = index((l) => l.evt === "gate.accepted" && l.event === first.id);
  const queuedSkip = await d.waitLog((l) => l.evt === "heartbeat.skipped" && l.reason === "queued" && d.logs.indexOf(l) > accepted, 20_000);
  assert.ok(queuedSkip);
  await w.waitReply(first, 30_000);
  await w.waitReply(second, 30_000);
  const mentionEnds = () =>
    d.logs.map((l, i) => (i > accepted && l.evt === "turn.end" && l.heartbeat !== true ? i : -1)).filter((i) => i >= 0);
  await d.waitLog(() => mentionEnds().length >= 2);
  const bothDone = mentionEnds()[1]!;
  assert.deepEqual(
    d.logs.slice(accepted, bothDone).filter((l) => l.evt === "heartbeat.fired"),
    [],
    "no heartbeat fired before both mentions were answered",
  );
});

test("/metrics counts fired and skipped ticks by reason, matching the log", async () => {
  // Just after a tick's log line the next tick is about a second away: compare then.
  const n = d.logs.length;
  await d.waitLog((l) => (l.evt === "heartbeat.fired" || l.evt === "heartbeat.skipped") && d.logs.indexOf(l) >= n);
  const text = await (await fetch(metricsUrl)).text();
  const count = (outcome: string, reason: string) =>
    Number(new RegExp(`^buzz_bridge_heartbeats_total\\{outcome="${outcome}",reason="${reason}"\\} (\\d+)`, "m").exec(text)?.[1] ?? 0);
  const logged = (evt: string, reason?: string) =>
    d.logs.filter((l) => l.evt === evt && (reason === undefined || l.reason === reason)).length;
  assert.equal(count("fired", ""), logged("heartbeat.fired"));
  assert.equal(count("skipped", "busy"), logged("heartbeat.skipped", "busy"));
  assert.equal(count("skipped", "heartbeat-running"), logged("heartbeat.skipped", "heartbeat-running"));
});

test("queued mentions go first: a tick with mentions waiting is skipped as queued; no tick fires outside heartbeat.channel's membership", () => {
  let load = { inFlight: 0, queued: 2 };
  let member = false;
  const runs: number[] = [];
  const hb = new Heartbeat({
    everyMs: 60_000,
    channel: "c",
    load: () => load,
    listening: () => true,
    member: () => member,
    run: async () => runs.push(1),
    logger: createLogger({ level: "silent" }),
  });
  assert.equal(hb.tick(), "not-a-member");
  member = true;
  assert.equal(hb.tick(), "queued");
  load = { inFlight: 1, queued: 0 };
  assert.equal(hb.tick(), "busy");
  load = { inFlight: 0, queued: 0 };
  assert.equal(hb.tick(), "fired");
  assert.deepEqual(runs, [1]);
});
