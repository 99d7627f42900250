/**
 * The ops endpoint's DNS-rebinding defence: a request whose `Host` names something other
 * than the endpoint's own names (a page at evil.example whose name now resolves to
 * 127.0.0.1) gets 421 on /status, /status.json and /metrics, with a throttled log line;
 * loopback names, the listen address and `http.allow_hosts` are served; /healthz answers
 * any probe. The real endpoint on 127.0.0.1 over node:http.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { request } from "node:http";
import { startHttp, opsHostRule, type HttpHandle } from "../../src/app/http/http.js";
import { hostAllowed } from "../../src/base/host-check.js";
import { Metrics } from "../../src/app/http/metrics.js";
import { captureLogger } from "../../kit/queue-helpers.js";

/** GET `path` with this exact Host header; the status and the body. */
function get(url: string, path: string, host: string): Promise<{ status: number; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, headers: { host } }, (res) => {
      let body = "";
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the ops endpoint answers only its own Host names", () => {
  let h: HttpHandle;
  let port: string;
  const { logger, lines } = captureLogger("debug");
  before(async () => {
    h = await startHttp({
      listen: "127.0.0.1:0",
      metrics: new Metrics(),
      readiness: () => ({ checks: [] }),
      status: () => "<p>owner npub1… asked about #secret-channel</p>",
      statusJson: () => ({ owner: "npub1…", channels: ["secret-channel"] }),
      allowHosts: ["ops.example.com"],
      logger,
    });
    port = new URL(h.url).port;
  });
  after(() => h.close());

  test("a foreign Host gets 421 on /status, /status.json and /metrics, with a throttled log line", async () => {
    for (const path of ["/status", "/status.json", "/metrics"]) {
      const r = await get(h.url, path, `evil.example:${port}`);
      assert.equal(r.status, 421, path);
      assert.ok(!r.body.includes("secret-channel"), `${path} shows nothing`);
    }
    for (let i = 0; i < 20; i++) assert.equal((await get(h.url, "/status.json", "evil.example")).status, 421);
    const refused = lines.filter((l) => l.evt === "http.refused" && l.reason === "host");
    assert.equal(refused.length, 5, "five lines a minute, the rest counted when the window ends");
  });

  test("loopback names, the listen address and http.allow_hosts are served; /healthz answers any Host", async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, "LOCALHOST", `[::1]:${port}`, "ops.example.com"]) {
      const r = await get(h.url, "/status.json", host);
      assert.equal(r.status, 200, host);
      assert.ok(r.body.includes("secret-channel"));
    }
    assert.equal((await get(h.url, "/healthz", "evil.example")).status, 200);
  });

  test("listening on every address: IP literals and the configured names, never another name", () => {
    const rule = opsHostRule("0.0.0.0", ["ops.example.com"]);
    assert.ok(hostAllowed("10.1.2.3:9464", rule), "a pod IP (Prometheus in Kubernetes)");
    assert.ok(hostAllowed("ops.example.com:9464", rule));
    assert.ok(!hostAllowed("evil.example:9464", rule));
    const one = opsHostRule("10.0.0.5");
    assert.ok(hostAllowed("10.0.0.5:9464", one));
    assert.ok(!hostAllowed("localhost:9464", one), "not listening on loopback");
    assert.ok(!hostAllowed(undefined, one), "no Host at all");
  });
});
