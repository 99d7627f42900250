/**
 * Privileged loopback ports in a sandboxed agent's environment (docs/security.md): an
 * `agent.env` naming `http://127.0.0.1:9/` (a registry stand-in) and `https://127.0.0.1:443/`
 * (a local gateway) never stops the agent starting in the bubblewrap sandbox. Ports below
 * 1024 need a capability the sandbox drops, so they are left out with a warning naming each,
 * and the agent starts and answers; an unprivileged port named beside them is still carried.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { World } from "../kit/world.js";

let w: World | undefined;
after(() => w?.close());

test("an agent env naming 127.0.0.1:9 and :443 starts sandboxed and answers; each port is named in a warning", async () => {
  w = await World.create({ channelName: "ports-room" });
  const d = await w.startDaemon({
    agent: {
      sandbox: "bubblewrap",
      env: { REGISTRY_URL: "http://127.0.0.1:9/", GATEWAY_URL: "https://127.0.0.1:443/v1", CACHE_URL: "http://127.0.0.1:4873/" },
    },
  });
  const sandbox = await d.waitLog((l) => l.evt === "agent.sandbox");
  assert.deepEqual(sandbox.loopback_ports, [9, 443, 4873], "the configured ports are asked for");
  const ev = await w.owner.post("@agent hello from the ports room");
  const [reply] = await w.waitReplies(ev, 1);
  assert.ok(reply, "the sandboxed agent answered");
  const warnings = d.logs.filter((l) => l.evt === "agent.stderr" && /is not carried into the sandbox/.test(String(l.line)));
  for (const port of [9, 443])
    assert.ok(
      warnings.some((l) => String(l.line).includes(`loopback port ${port} is not carried`)),
      `a warning names port ${port}: ${JSON.stringify(warnings.map((l) => l.line))}`,
    );
  assert.ok(!warnings.some((l) => String(l.line).includes("port 4873")), "an unprivileged port is carried");
  // bubblewrap's own set-up fails now and then on a loaded machine, and the start is tried again;
  // what must never happen is a start failing over a port, or the agent given up on.
  const failed = d.logs.filter((l) => l.evt === "agent.start_failed");
  assert.ok(
    !failed.some((l) => /\b(9|443)\b|EACCES|bind|privileged|capabilit/i.test(JSON.stringify(l))),
    `no start failed over a port: ${JSON.stringify(failed)}`,
  );
  assert.equal(d.logs.filter((l) => l.evt === "agent.circuit_open").length, 0, "the agent was never given up on");
});
