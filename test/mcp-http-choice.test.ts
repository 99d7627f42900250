/**
 * Which way a session's MCP slot goes (`mcp.transport`, docs/configuration.md), judged by
 * what the channel sees and the session's `turn.session` line: `auto` gives the daemon's
 * HTTP endpoint to an agent that advertises `mcpCapabilities.http` and keeps the stdio proxy
 * for a sandbox without network (`agent.network: off`); `stdio` keeps the proxy even for an
 * agent that speaks HTTP; `http` with an agent that does not speak it fails the mention
 * with a notice that names the key and the way out. The demo agent over the real relay; it
 * speaks MCP over HTTP with DEMO_AGENT_MCP_HTTP=1.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { World, type DaemonProc } from "../kit/world.js";
import { ask, assertAnsweredOnce, isFailureNotice } from "../kit/channel-oracle.js";
import { KIND } from "../src/nostr/kinds.js";

const worlds: World[] = [];
after(async () => {
  for (const w of worlds) await w.close();
});

async function world(): Promise<World> {
  const w = await World.create({ channelName: "choice-room" });
  worlds.push(w);
  return w;
}

/** The `mcp` field of the session that served `asked`'s turn, once that turn has ended answered. */
async function slotOf(w: World, d: DaemonProc, asked: Awaited<ReturnType<typeof ask>>, channel = w.channel): Promise<unknown> {
  const end = await d.waitLog((l) => l.evt === "turn.end" && l.scope === `${channel}/${asked.event.id}`, 60_000);
  assert.equal(end.status, "answered", `the turn in ${channel} ended answered`);
  const replies = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [asked.event.id] });
  const answer = replies.find((e) => e.content.includes(asked.marker));
  assert.match(answer?.content ?? "", /tool get_channel: .*"name":"/, "the built-in tool answered through the slot");
  return d.logs.find((l) => l.evt === "turn.session" && l.scope === end.scope)?.mcp;
}

test("auto: an agent that speaks MCP over HTTP gets the daemon's endpoint, except in a channel whose sandbox has no network, which keeps the stdio proxy", async () => {
  const w = await world();
  const offline = await w.addChannel({ name: "offline-room" });
  const d = await w.startDaemon({
    agent: { env: { DEMO_AGENT_MCP_HTTP: "1" }, sandbox: "bubblewrap" },
    channels: [{ id: "*" }, { id: offline, agent: { network: "off" } }],
  });
  const online = await ask(w.owner, "#tool get_channel {}", { channel: w.channel });
  const cut = await ask(w.owner, "#tool get_channel {}", { channel: offline });
  assert.equal(await slotOf(w, d, online), "http", "the channel with network: the daemon's HTTP endpoint");
  assert.equal(await slotOf(w, d, cut, offline), "stdio", "agent.network: off: the stdio proxy");
  await assertAnsweredOnce(w, [online, cut], { timeoutMs: 30_000 });
});

test("stdio: an agent that speaks MCP over HTTP still gets the stdio proxy; its turn runs through it", async () => {
  const w = await world();
  const d = await w.startDaemon({ agent: { env: { DEMO_AGENT_MCP_HTTP: "1" } }, mcp: { transport: "stdio" } });
  const asked = await ask(w.owner, "#tool get_channel {}", { channel: w.channel });
  assert.equal(await slotOf(w, d, asked), "stdio");
  assert.ok(
    d.logs.some((l) => l.evt === "link.connected"),
    "the proxy connected over the link",
  );
  assert.ok(!d.logs.some((l) => l.evt === "mcp.http_connected"), "nothing connected over HTTP");
  await assertAnsweredOnce(w, [asked], { timeoutMs: 30_000 });
});

test("http with an agent that does not speak MCP over HTTP: the mention gets one notice naming mcp.transport and the way out", async () => {
  const w = await world();
  await w.startDaemon({ mcp: { transport: "http" }, queue: { max_attempts: 1 } });
  const asked = await ask(w.owner, "#tool get_channel {}", { channel: w.channel, fails: true });
  const [notice] = await w.waitEvents({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [asked.event.id] }, (evs) =>
    evs.some(isFailureNotice),
  );
  assert.ok(notice && isFailureNotice(notice), "a failure notice");
  assert.match(notice.content, /mcp\.transport is http but the agent does not advertise mcpCapabilities\.http/);
  assert.match(notice.content, /set mcp\.transport: auto \(or stdio\)/);
  await assertAnsweredOnce(w, [asked], { timeoutMs: 30_000 });
});
