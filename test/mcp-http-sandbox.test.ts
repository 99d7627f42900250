/**
 * A sandboxed agent that takes its MCP slot over HTTP probes the host's loopback
 * (test/fixtures/escape-agent.mjs with ESCAPE_AGENT_MCP_HTTP=1, `agent.sandbox:
 * bubblewrap`, `mcp.transport: http`). In its network of its own it reaches its own
 * endpoint — its reply comes through `send_message` over HTTP — and nothing else on the
 * host's loopback: not the daemon's /status and /metrics, not another session's endpoint,
 * not another local service.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:net";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { World, REPO } from "../kit/world.js";

const ESCAPE_AGENT = join(REPO, "test", "fixtures", "escape-agent.mjs");

let w: World | undefined;
let service: Server | undefined;
after(async () => {
  await w?.close();
  service?.close();
});

test("a sandboxed agent over HTTP reaches its own endpoint and nothing else on loopback: not /metrics, not another session's endpoint, not another service", async () => {
  w = await World.create({ channelName: "probe-room" });
  const other = await w.addChannel({ name: "other-room" });
  // Another service on the host's loopback.
  service = createServer((s) => s.end("hello from the host\n"));
  await new Promise<void>((r) => service!.listen(0, "127.0.0.1", () => r()));
  const servicePort = (service.address() as AddressInfo).port;
  const d = await w.startDaemon({
    agent: { command: process.execPath, args: [ESCAPE_AGENT], env: { ESCAPE_AGENT_MCP_HTTP: "1" }, sandbox: "bubblewrap" },
    mcp: { transport: "http" },
    http: { listen: "127.0.0.1:0" },
  });
  const sandbox = await d.waitLog((l) => l.evt === "agent.sandbox" && l.state === "bubblewrap");
  assert.equal(sandbox.network, "private", "agents get a network of their own here (slirp4netns)");

  // The other channel's session first: its endpoint is the one to probe.
  const hello = await w.owner.post("@agent hello from the other room", { channel: other });
  const [otherReply] = await w.waitReplies(hello, 1, 30_000);
  assert.doesNotMatch(otherReply!.content, /^\(no proxy\)/, "the other session replied through its endpoint");
  const otherEndpoint = await d.waitLog((l) => l.evt === "mcp.http_connected" && String(l.session).startsWith(other));

  const targets = {
    daemonHttp: Number(new URL(String(d.logs.find((l) => l.evt === "daemon.started")!.http)).port),
    endpoint: Number(otherEndpoint.port),
    loopback: servicePort,
  };
  const ev: Event = await w.owner.post(`@agent #escape ${JSON.stringify(targets)}`);
  const [reply] = await w.waitReplies(ev, 1, 30_000);
  assert.doesNotMatch(reply!.content, /^\(no proxy\)/, `its own endpoint answered (send_message over HTTP): ${reply!.content}`);
  const at = JSON.parse(reply!.content) as Record<string, string> & { ifaces: string[] };
  assert.ok(at.ifaces.includes("tap0"), `a network of its own: ${at.ifaces.join(", ")}`);
  assert.match(at.daemonHttp!, /^failed/, "the daemon's /status and /metrics are out of reach");
  assert.match(at.endpoint!, /^failed/, "another session's endpoint is out of reach");
  assert.match(at.loopback!, /^failed/, "another service on the host's loopback is out of reach");
  const mine = d.logs.filter((l) => l.evt === "mcp.http_connected" && String(l.session).startsWith(w!.channel));
  assert.equal(mine.length, 1, "the probing session connected to its own endpoint");
  assert.notEqual(mine[0]!.port, otherEndpoint.port, "each session has its own endpoint");
});
