/**
 * Files attached to a reply when the daemon serves the MCP slot over HTTP (demo agent with
 * DEMO_AGENT_MCP_HTTP=1, `mcp.transport: http`, dev relay): the daemon never opens a path
 * the agent names, so the file is read as the stdio proxy reads it, in the agent's sandbox
 * and working directory. Sandboxed, a path the agent cannot see — the daemon's config file
 * with the key in it — is not read: the agent is told there is no such file, and nothing
 * of it is posted.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import { World } from "../kit/world.js";
import { imetaOf } from "../src/nostr/imeta.js";
import { blossomHeader } from "../src/nostr/blossom.js";
import { sha256 } from "./fixtures/media.js";
import { KIND } from "../src/nostr/kinds.js";

const worlds: World[] = [];
after(async () => {
  for (const w of worlds) await w.close();
});

async function world(sandbox: "off" | "bubblewrap") {
  const w = await World.create({ channelName: `attach-http-${sandbox}` });
  worlds.push(w);
  const d = await w.startDaemon({
    // No world directory bound in: the sandbox shows the agent its room and nothing of the daemon's.
    agent: { env: { DEMO_AGENT_MCP_HTTP: "1" }, sandbox, sandbox_binds: [] },
    mcp: { transport: "http" },
  });
  return { w, d };
}

async function assertAttached(w: World, reply: Event): Promise<void> {
  const [file] = imetaOf(reply);
  assert.ok(file, `the reply carries an imeta tag: ${reply.content.slice(-400)} ${JSON.stringify(reply.tags)}`);
  assert.ok(reply.content.includes(file.url), "the url is in the text too");
  const res = await fetch(file.url, { headers: { authorization: blossomHeader("get", file.sha256!, w.owner.sk) } });
  const body = Buffer.from(await res.arrayBuffer());
  assert.equal(sha256(body), file.sha256);
  assert.match(body.toString(), /attached by the demo agent/);
}

test("over the HTTP slot the agent attaches a file from its working directory: uploaded, imeta on the reply", async () => {
  const { w, d } = await world("off");
  const ev = await w.owner.post("@agent #attach-file send me a file");
  const [reply] = await w.waitReplies(ev);
  await assertAttached(w, reply!);
  const open = d.logs.find((l) => l.evt === "agent.session_open");
  assert.equal(open?.mcp, "http", "the session's slot was the daemon's HTTP endpoint");
});

test("sandboxed over the HTTP slot: its own file is attached; the daemon's config file, outside its view, is no such file", async () => {
  const { w, d } = await world("bubblewrap");
  await d.waitLog((l) => l.evt === "agent.sandbox" && l.state === "bubblewrap");
  const ev = await w.owner.post("@agent #attach-file send me a file");
  const [reply] = await w.waitReplies(ev, 1, 30_000);
  await assertAttached(w, reply!);

  const args = { content: "the config", attachments: [{ path: d.configFile }] };
  const ask = await w.owner.post(`@agent #tool send_message ${JSON.stringify(args)}`);
  const [report] = await w.waitReplies(ask, 1, 30_000);
  assert.match(report!.content, new RegExp(`tool send_message: (?:error: )?send_message failed: attachment ${d.configFile}: no such file`));
  const posted = await w.query({ kinds: [KIND.message], authors: [w.agent.pk], "#e": [ask.id] });
  assert.deepEqual(
    posted.map((e) => e.content.slice(0, 40)),
    [report!.content.slice(0, 40)],
    "only the agent's report: nothing of the config file",
  );
  assert.deepEqual(imetaOf(report!), []);
});
