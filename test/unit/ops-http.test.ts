/**
 * The operations endpoint over real HTTP on 127.0.0.1 / ::1: liveness, readiness that
 * follows the daemon's checks, Prometheus text that counts what the daemon reported,
 * and the errors a person sees when the address is taken or malformed.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { startHttp, parseListen, HttpListenError, type HttpHandle, type ReadyCheck } from "../../src/app/http/http.js";
import { Metrics } from "../../src/app/http/metrics.js";
import { needs } from "../fixtures/ci.js";

const handles: HttpHandle[] = [];
after(async () => {
  await Promise.all(handles.map((h) => h.close()));
});

async function start(readiness: () => { checks: ReadyCheck[] } = () => ({ checks: [] }), metrics = new Metrics(), listen = "127.0.0.1:0") {
  const h = await startHttp({ listen, metrics, readiness });
  handles.push(h);
  return h;
}

test("/healthz answers 200 with status ok", async () => {
  const h = await start();
  const res = await fetch(`${h.url}/healthz`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /application\/json/);
  assert.deepEqual(await res.json(), { status: "ok" });
});

test("/readyz flips between 200 and 503 as the checks change, naming the failing check", async () => {
  let relayUp = true;
  const h = await start(() => ({
    checks: [
      { name: "relay", ok: relayUp, detail: relayUp ? "authenticated and subscribed" : "disconnected: connection refused" },
      { name: "agents", ok: true, detail: "1 of 1 circuits closed" },
      { name: "state", ok: true },
    ],
  }));

  let res = await fetch(`${h.url}/readyz`);
  assert.equal(res.status, 200);
  let body = (await res.json()) as { status: string; checks: ReadyCheck[] };
  assert.equal(body.status, "ready");
  assert.deepEqual(
    body.checks.map((c) => c.name),
    ["relay", "agents", "state"],
  );

  relayUp = false;
  res = await fetch(`${h.url}/readyz`);
  assert.equal(res.status, 503);
  body = (await res.json()) as { status: string; checks: ReadyCheck[] };
  assert.equal(body.status, "not ready");
  const failing = body.checks.filter((c) => !c.ok);
  assert.deepEqual(failing, [{ name: "relay", ok: false, detail: "disconnected: connection refused" }]);

  relayUp = true;
  res = await fetch(`${h.url}/readyz`);
  assert.equal(res.status, 200);
  await res.body?.cancel();
});

test("/readyz is 503 when the readiness function itself throws", async () => {
  const h = await start(() => {
    throw new Error("state store closed");
  });
  const res = await fetch(`${h.url}/readyz`);
  assert.equal(res.status, 503);
  const body = (await res.json()) as { checks: ReadyCheck[] };
  assert.equal(body.checks[0]?.ok, false);
  assert.match(body.checks[0]?.detail ?? "", /state store closed/);
});

test("/metrics is Prometheus text counting gate decisions, turns and the rest", async () => {
  const metrics = new Metrics();
  const h = await start(undefined, metrics);
  metrics.eventReceived(9);
  metrics.gateDecision("deny", "not-allowed");
  metrics.gateDecision("accept", "owner");
  metrics.gateDecision("accept", "owner");
  metrics.turnEnded("answered", 12.5);
  metrics.queueDepth(3);
  metrics.circuitState(true);
  metrics.hookFanout("_Stop", "object", 0.2);
  metrics.relayState("connecting");
  metrics.relayState("subscribed");

  const res = await fetch(`${h.url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  assert.match(text, /^buzz_bridge_events_received_total\{kind="9"\} 1$/m);
  assert.match(text, /^buzz_bridge_gate_decisions_total\{decision="deny",reason="not-allowed"\} 1$/m);
  assert.match(text, /^buzz_bridge_gate_decisions_total\{decision="accept",reason="owner"\} 2$/m);
  assert.match(text, /^buzz_bridge_turns_total\{outcome="answered"\} 1$/m);
  assert.match(text, /^buzz_bridge_turn_duration_seconds_bucket\{le="20",outcome="answered"\} 1$/m);
  assert.match(text, /^buzz_bridge_turn_duration_seconds_bucket\{le="10",outcome="answered"\} 0$/m);
  assert.match(text, /^buzz_bridge_queue_depth 3$/m);
  assert.match(text, /^buzz_bridge_agent_circuit_open\{agent="agent"\} 1$/m);
  assert.match(text, /^buzz_bridge_proxy_hook_fanouts_total\{hook="_Stop",verdict="object"\} 1$/m);
  assert.match(text, /^buzz_bridge_relay_state\{state="connecting"\} 0$/m);
  assert.match(text, /^buzz_bridge_relay_state\{state="subscribed"\} 1$/m);
  // Default process metrics come along, so stock Node dashboards work.
  assert.match(text, /^process_cpu_user_seconds_total /m);
  // Every metric is documented.
  assert.match(text, /^# HELP buzz_bridge_turns_total \S/m);
});

test("two Metrics instances keep separate counts (own registries)", async () => {
  const a = new Metrics({ defaultMetrics: false });
  const b = new Metrics({ defaultMetrics: false });
  a.turnEnded("failed", 1);
  assert.match(await a.text(), /^buzz_bridge_turns_total\{outcome="failed"\} 1$/m);
  assert.doesNotMatch(await b.text(), /outcome="failed"/);
});

test("unknown paths are 404, other methods on known paths 405", async () => {
  const h = await start();
  let res = await fetch(`${h.url}/nope`);
  assert.equal(res.status, 404);
  await res.body?.cancel();
  res = await fetch(`${h.url}/`);
  assert.equal(res.status, 404);
  await res.body?.cancel();
  res = await fetch(`${h.url}/healthz`, { method: "POST" });
  assert.equal(res.status, 405);
  assert.equal(res.headers.get("allow"), "GET, HEAD");
  await res.body?.cancel();
  // A query string does not change the route (probes sometimes add one).
  res = await fetch(`${h.url}/healthz?probe=1`);
  assert.equal(res.status, 200);
  await res.body?.cancel();
});

test("/status is HTML with a policy that forbids scripts and remote assets, rendered on each request; without a page it is 404", async () => {
  let n = 0;
  const h = await startHttp({
    listen: "127.0.0.1:0",
    metrics: new Metrics({ defaultMetrics: false }),
    readiness: () => ({ checks: [] }),
    status: () => `<p>render ${++n}</p>`,
    statusJson: () => ({ render: ++n }),
  });
  try {
    const json = await fetch(`${h.url}/status.json`);
    assert.equal(json.status, 200);
    assert.match(json.headers.get("content-type") ?? "", /^application\/json/);
    assert.deepEqual(await json.json(), { render: 1 });
    let res = await fetch(`${h.url}/status`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/html/);
    assert.match(res.headers.get("content-security-policy") ?? "", /default-src 'none'/);
    assert.equal(await res.text(), "<p>render 2</p>");
    res = await fetch(`${h.url}/status`);
    assert.equal(await res.text(), "<p>render 3</p>", "fresh on every request");
  } finally {
    await h.close();
  }
  const without = await start();
  const res = await fetch(`${without.url}/status`);
  assert.equal(res.status, 404);
  const paths = ((await res.json()) as { paths: string[] }).paths;
  assert.ok(!paths.includes("/status") && !paths.includes("/status.json"), "not listed when there is no page");
});

test("a port in use is a clear HttpListenError", async () => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  const port = (blocker.address() as { port: number }).port;
  try {
    await assert.rejects(
      startHttp({ listen: `127.0.0.1:${port}`, metrics: new Metrics({ defaultMetrics: false }), readiness: () => ({ checks: [] }) }),
      (err: unknown) => {
        assert.ok(err instanceof HttpListenError);
        assert.equal(err.message, `cannot listen on 127.0.0.1:${port}: address already in use (another buzz-bridge?)`);
        return true;
      },
    );
  } finally {
    await new Promise<void>((resolve) => blocker.close(() => resolve()));
  }
});

/** Containers without IPv6 have no ::1; the test then has nothing to bind. */
function canBindV6(): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(0, "::1", () => s.close(() => resolve(true)));
  });
}

test("IPv6 [::1]:port is supported and reported in brackets", async (t) => {
  const v6 = needs(await canBindV6(), "an IPv6 loopback address (::1)");
  if (v6.skip) {
    t.skip(v6.skip);
    return;
  }
  v6.assertPresent();
  const h = await start(undefined, new Metrics({ defaultMetrics: false }), "[::1]:0");
  assert.match(h.url, /^http:\/\/\[::1\]:\d+$/);
  const res = await fetch(`${h.url}/healthz`);
  assert.equal(res.status, 200);
  await res.body?.cancel();
});

test("parseListen accepts host:port and [v6]:port, refuses the rest", () => {
  assert.deepEqual(parseListen("127.0.0.1:9464"), { host: "127.0.0.1", port: 9464 });
  assert.deepEqual(parseListen("localhost:80"), { host: "localhost", port: 80 });
  assert.deepEqual(parseListen("[::1]:9464"), { host: "::1", port: 9464 });
  for (const bad of ["9464", "::1:9464", "host:", "host:70000", "[::1]", ""]) {
    assert.throws(() => parseListen(bad), HttpListenError, bad);
  }
});

test("close() returns promptly even with a keep-alive connection open", async () => {
  const h = await startHttp({ listen: "127.0.0.1:0", metrics: new Metrics({ defaultMetrics: false }), readiness: () => ({ checks: [] }) });
  const res = await fetch(`${h.url}/healthz`, { headers: { connection: "keep-alive" } });
  await res.body?.cancel();
  await h.close();
  await assert.rejects(fetch(`${h.url}/healthz`));
});

test("sampled sources are read at scrape time; a failing getter keeps the last value", async () => {
  const metrics = new Metrics({ defaultMetrics: false });
  let depth = 2;
  let reconnects = 0;
  let state = "connecting";
  let agentsBroken = false;
  metrics.sample({
    queueDepth: () => depth,
    relayReconnects: () => reconnects,
    relayState: () => state,
    agentProcesses: () => {
      if (agentsBroken) throw new Error("pool gone");
      return 3;
    },
  });
  let text = await metrics.text();
  assert.match(text, /^buzz_bridge_queue_depth 2$/m);
  assert.match(text, /^buzz_bridge_relay_reconnects_total 0$/m);
  assert.match(text, /^buzz_bridge_relay_state\{state="connecting"\} 1$/m);
  assert.match(text, /^buzz_bridge_agent_processes 3$/m);

  depth = 0;
  reconnects = 4;
  state = "subscribed";
  agentsBroken = true;
  text = await metrics.text();
  assert.match(text, /^buzz_bridge_queue_depth 0$/m);
  assert.match(text, /^buzz_bridge_relay_reconnects_total 4$/m);
  assert.match(text, /^buzz_bridge_relay_state\{state="connecting"\} 0$/m);
  assert.match(text, /^buzz_bridge_relay_state\{state="subscribed"\} 1$/m);
  assert.match(text, /^buzz_bridge_agent_processes 3$/m);

  // A new connection object starts counting from 0 again: the counter never goes back.
  reconnects = 1;
  await metrics.text();
  reconnects = 3;
  assert.match(await metrics.text(), /^buzz_bridge_relay_reconnects_total 6$/m);
});
