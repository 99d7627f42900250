/**
 * Fleet mode at start: a database that is not there yet is waited for (a clear log line,
 * /readyz 503 naming the state check, no password anywhere), and the daemon starts once
 * it appears; a daemon of another identity pointed at a fleet's database is refused and
 * exits with a message saying why.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli } from "./fixtures/cli.js";
import { generateSecretKey, nip19 } from "nostr-tools";
import { World } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { postgresOrSkip, type PgServer } from "../kit/postgres.js";
import { sleep } from "../kit/wait.js";

/** A safety net, not a target: two daemon starts and two doctor runs, sized for a slow machine running a second copy of the suite. */
const TEST_BUDGET_MS = 150_000;

let server: PgServer | undefined;
let skip: string | undefined;
let w: World;

before(async () => {
  const r = await postgresOrSkip();
  if (typeof r === "string") skip = r;
  else server = r;
  w = await World.create();
});
after(async () => {
  await w.close();
  await server?.stop();
});

const fleetConfig = (i: number, extra: Record<string, unknown> = {}) => ({
  state_dir: join(w.dir, `state-${i}`),
  state: { backend: "postgres", url: "${BUZZ_BRIDGE_DATABASE_URL}" },
  http: { listen: "127.0.0.1:0" },
  log: { level: "info" },
  ...extra,
});

test("a database not reachable yet: the daemon retries with a log line, /readyz 503 and a /status page saying so, then starts when it appears", {
  timeout: TEST_BUDGET_MS,
}, async (ctx) => {
  if (skip) return ctx.skip(skip);
  const name = `later_${process.pid}`;
  const env = { BUZZ_BRIDGE_DATABASE_URL: server!.urlOf(name) };
  const d = await w.startDaemon(fleetConfig(0), { env, waitStarted: false });
  const waiting = await d.waitLog((l) => l.evt === "state.unreachable");
  assert.match(String(waiting.err), /cannot use the PostgreSQL database postgres:\/\/bb_test:\[redacted\]@127\.0\.0\.1/);
  const http = await d.waitLog((l) => l.evt === "http.listening");
  const ready = await fetch(`${String(http.url)}/readyz`);
  assert.equal(ready.status, 503);
  assert.match(await ready.text(), /waiting for the fleet's PostgreSQL database/);
  const waitingPage = await fetch(`${String(http.url)}/status`);
  assert.equal(waitingPage.status, 200);
  assert.match(await waitingPage.text(), /waiting for the fleet&#39;s database/);

  await server!.createDatabase(name);
  await d.waitLog((l) => l.evt === "daemon.started", 40_000);
  const after = await fetch(`${String(http.url)}/readyz`);
  const body = await after.text();
  assert.doesNotMatch(body, /waiting for the fleet/);
  const metrics = await (await fetch(`${String(http.url)}/metrics`)).text();
  assert.match(metrics, /^buzz_bridge_fleet_leases 0$/m);
  assert.match(metrics, /^buzz_bridge_fleet_queue_depth 0$/m);
  const page = await (await fetch(`${String(http.url)}/status`)).text();
  assert.match(page, /Fleet: this daemon [^<]+\/\d+\/\w+ holds 0 leases; 0 mentions waiting across the fleet/);
  assert.equal(await d.stop(), 0);
  assert.ok(!d.raw().includes(server!.password), "no password in the daemon's output");
});

test("a daemon of another identity on a fleet's database is refused and exits, saying whose database it is", {
  timeout: TEST_BUDGET_MS,
}, async (ctx) => {
  if (skip) return ctx.skip(skip);
  const url = await server!.createDatabase();
  const env = { BUZZ_BRIDGE_DATABASE_URL: url };
  const first = await w.startDaemon({}, { configFile: w.writeConfig(fleetConfig(1), "fleet-1.yaml"), env });
  const other = nip19.nsecEncode(generateSecretKey());
  const intruder = await w.startDaemon(
    {},
    {
      configFile: w.writeConfig(fleetConfig(2, { identity: { secret_key: other, owner: w.owner.npub } }), "fleet-2.yaml"),
      env,
      waitStarted: false,
    },
  );
  const failed = await intruder.waitLog((l) => l.evt === "daemon.start_failed");
  assert.match(String(failed.err), /belongs to another agent identity \(pubkey [0-9a-f]{64}\)/);
  assert.ok(String(failed.err).includes(w.agent.pk));
  assert.notEqual(await intruder.exited, 0);
  assert.ok(!intruder.raw().includes(server!.password));

  // doctor, for the fleet's own config and for the intruder's
  const doctor = (configFile: string) => runCli(["doctor", "-c", configFile], { env: { ...process.env, ...env }, timeout: 40_000 });
  const ok = await doctor(first.configFile);
  assert.match(
    ok.stdout,
    /✓ database +postgres:\/\/bb_test:\[redacted\]@127\.0\.0\.1:\d+\/\w+ reachable and migrated \(schema version \d+\)/,
  );
  assert.match(ok.stdout, /✓ clock +this machine's clock is within \d+ ms of the database's/);
  assert.match(ok.stdout, /✓ fleet +1 live daemon, 0 scope leases, 0 mentions waiting/);
  assert.match(ok.stdout, new RegExp(`/${first.proc.pid}/\\w+: 0 leases of max_concurrent 2, seen \\d+ s ago`));
  const bad = await doctor(intruder.configFile);
  assert.equal(bad.status, 1);
  assert.match(bad.stdout, /✗ database +.*belongs to another agent identity/);
  assert.ok(!(ok.stdout + ok.stderr + bad.stdout + bad.stderr).includes(server!.password), "doctor shows no password");
  assert.equal(await first.stop(), 0);
});

test("with edits subscribed, an edit of a mention the fleet accepted is not taken for a new mention by any daemon", {
  timeout: TEST_BUDGET_MS,
}, async (ctx) => {
  if (skip) return ctx.skip(skip);
  const url = await server!.createDatabase();
  const env = { BUZZ_BRIDGE_DATABASE_URL: url };
  const daemons = [
    await w.startDaemon(
      {},
      { configFile: w.writeConfig(fleetConfig(3, { http: undefined, defaults: { kinds: [9, 40003] } }), "fleet-3.yaml"), env },
    ),
    await w.startDaemon(
      {},
      { configFile: w.writeConfig(fleetConfig(4, { http: undefined, defaults: { kinds: [9, 40003] } }), "fleet-4.yaml"), env },
    ),
  ];
  const original = await w.owner.post("@agent please summarise the release notes");
  await w.waitReply(original, 30_000);
  const c = await w.owner.relay();
  const { outcome } = await c.send({
    kind: 40003,
    created_at: Math.floor(Date.now() / 1000),
    content: "@agent please summarise the release notes (typo fixed)",
    tags: [
      ["h", w.channel],
      ["e", original.id],
      ["p", w.agent.pk],
    ],
  });
  assert.equal(outcome.status, "accepted");
  await Promise.all(
    daemons.map((d) => d.waitLog((l) => l.evt === "gate.denied" && l.reason === "edit-of-handled", 10_000).catch(() => undefined)),
  );
  await sleep(3000); // an answer to the edit would be stored by now
  const agentMessages = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#h": [w.channel] });
  assert.deepEqual(
    agentMessages.map((m) => m.tags.find((t) => t[0] === "e")?.[1]).filter((e) => e !== original.id),
    [],
    "nothing answers the edit",
  );
  for (const d of daemons) assert.equal(await d.stop(), 0);
});
