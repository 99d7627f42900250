/**
 * The link end to end: a LinkServer with createBuzzTools over a real dev relay, the
 * built proxy started with the session's env (no manifest file), an SDK Client calling
 * the buzz tools, and the daemon asking the proxy for a merged _Stop.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { npubEncode } from "nostr-tools/nip19";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { finalizeEvent, generateSecretKey, getPublicKey, type Event, type EventTemplate, type Filter } from "nostr-tools";
import { startDevRelay, type DevRelay } from "../src/devrelay/index.js";
import { RawClient } from "../kit/raw-client.js";
import { createLogger } from "../src/base/log.js";
import type { RelayPort } from "../src/relay/port.js";
import { LinkServer, type LinkSession } from "../src/link/index.js";
import { createBuzzTools } from "../src/turn/buzz-tool-handlers.js";
import { message } from "../src/nostr/events.js";
import { BUZZ_TOOL_ARGS, BUZZ_TOOL_NAMES, type BuzzToolName } from "../src/contract/buzz-tool-schemas.js";
import { Ajv } from "ajv";
import { z } from "zod";
import { CLI, gate, startProxy, textOf, type RunningProxy } from "./fixtures/proxy-harness.js";
import { waitFor } from "../kit/wait.js";

/** A RelayPort over one authenticated WebSocket, as the daemon's relay client would be. */
async function relayPort(url: string, sk: Uint8Array): Promise<RelayPort & { close(): void }> {
  const c = await RawClient.authed(url, sk);
  let n = 0;
  return {
    sign: (t: EventTemplate) => finalizeEvent(t, sk),
    publish: async (ev: Event) => {
      const ok = await c.publish(ev);
      return ok[2] === true ? { status: "accepted" } : { status: "refused", reason: String(ok[3]) };
    },
    query: async (filters: Filter[]) => (await c.req(`q${n++}`, ...filters)).events,
    close: () => c.ws.close(),
  };
}

function captureLogger() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split("\n")) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger({ destination: sink, level: "debug" }), lines };
}

describe("buzz tools through the link", () => {
  const agentSk = generateSecretKey();
  const ownerSk = generateSecretKey();
  const agent = getPublicKey(agentSk);
  const owner = getPublicKey(ownerSk);
  let relay: DevRelay;
  let home: string;
  let link: LinkServer;
  let session: LinkSession;
  let proxy: RunningProxy;
  let port: Awaited<ReturnType<typeof relayPort>>;
  let ownerPort: Awaited<ReturnType<typeof relayPort>>;
  let chanA: string;
  let chanB: string;
  const published: Event[] = [];
  const cap = captureLogger();

  before(async () => {
    relay = await startDevRelay();
    chanA = await relay.createChannel({ name: "general", about: "where we talk", members: [agent, owner] });
    chanB = await relay.createChannel({ name: "elsewhere", members: [agent, owner] });
    home = mkdtempSync(join(tmpdir(), "link-"));
    port = await relayPort(relay.url, agentSk);
    ownerPort = await relayPort(relay.url, ownerSk);
    link = new LinkServer({ socketPath: join(home, "state", "link.sock"), logger: cap.logger });
    await link.start();
    session = link.register({
      sessionKey: `thread:${chanA}`,
      manifest: {
        servers: [
          {
            name: "ci",
            command: process.execPath,
            args: gate().args,
            env: { GATE_STOP_TEXT: "CI is red" },
            prefix: true,
            stop: "reprompt",
            on_error: "allow",
          },
          {
            name: "approval",
            command: process.execPath,
            args: gate().args,
            env: { GATE_STOP_TEXT: "waiting for approval" },
            prefix: true,
            stop: "reprompt",
            on_error: "allow",
          },
        ],
        hook_deadline: 2000,
        list_timeout: 15000,
      },
      tools: createBuzzTools({ channel: chanA, relay: port, onPublished: (ev) => published.push(ev) }),
    });
    proxy = await startProxy(null, session.env);
  });
  after(async () => {
    await proxy?.close();
    await link?.stop();
    port?.close();
    ownerPort?.close();
    await relay?.close();
    rmSync(home, { recursive: true, force: true });
  });

  test("the socket is private to the daemon's user", () => {
    assert.equal(statSync(link.socketPath).mode & 0o777, 0o600);
  });

  test("the proxy fetches its manifest over the link and lists the buzz tools unprefixed", async () => {
    const names = (await proxy.client.listTools()).tools.map((t) => t.name);
    for (const n of ["send_message", "add_reaction", "get_messages", "get_thread", "get_channel", "ci_pid", "_Stop"])
      assert.ok(names.includes(n), n);
    assert.ok(session.connected());
    assert.ok(!proxy.stderr().includes(session.env.BUZZ_BRIDGE_LINK_TOKEN!), "the token is never logged");
  });

  test("send_message publishes to the relay in the session's channel", async () => {
    const r = await proxy.call("send_message", { content: "hello from the agent" });
    assert.ok(!r.isError, textOf(r));
    const { event_id } = JSON.parse(textOf(r)) as { event_id: string };
    const [ev] = await ownerPort.query([{ ids: [event_id] }]);
    assert.ok(ev, "the owner sees it on the relay");
    assert.equal(ev.content, "hello from the agent");
    assert.equal(ev.pubkey, agent);
    assert.deepEqual(
      ev.tags.find((t) => t[0] === "h"),
      ["h", chanA],
    );
    assert.equal(published.at(-1)?.id, event_id, "the daemon is told what was published");
  });

  test("reply_to threads under the parent; reactions land on it", async () => {
    const parent = finalizeEvent(message(chanA, "@agent please look", { mentions: [agent] }), ownerSk);
    assert.equal((await ownerPort.publish(parent)).status, "accepted");
    const r = await proxy.call("send_message", { content: "on it", reply_to: parent.id, mentions: [owner] });
    assert.ok(!r.isError, textOf(r));
    const reply = published.at(-1)!;
    assert.deepEqual(
      reply.tags.filter((t) => t[0] === "e"),
      [["e", parent.id, "", "reply"]],
    );
    assert.ok(reply.tags.some((t) => t[0] === "p" && t[1] === owner));
    const re = await proxy.call("add_reaction", { event_id: parent.id, emoji: "👀" });
    assert.ok(!re.isError, textOf(re));
    const thread = JSON.parse(textOf(await proxy.call("get_thread", { event_id: reply.id }))) as {
      root: string;
      messages: { id: string }[];
    };
    assert.equal(thread.root, parent.id);
    assert.deepEqual(
      thread.messages.map((m) => m.id),
      [parent.id, reply.id],
    );
    const recent = JSON.parse(textOf(await proxy.call("get_messages", { limit: 5 }))) as { id: string }[];
    assert.ok(recent.some((m) => m.id === reply.id) && recent.some((m) => m.id === parent.id));
    const chan = JSON.parse(textOf(await proxy.call("get_channel"))) as { id: string; name?: string };
    assert.equal(chan.id, chanA);
  });

  test("docs/architecture.md §4 spellings work too: `event` for event_id, npub mentions", async () => {
    const parent = finalizeEvent(message(chanA, "@agent again", { mentions: [agent] }), ownerSk);
    assert.equal((await ownerPort.publish(parent)).status, "accepted");
    const re = await proxy.call("add_reaction", { event: parent.id, emoji: "👍" });
    assert.ok(!re.isError, textOf(re));
    assert.equal(published.at(-1)?.tags.find((t) => t[0] === "e")?.[1], parent.id);
    const th = await proxy.call("get_thread", { event: parent.id });
    assert.ok(!th.isError, textOf(th));
    // Someone other than the parent's author (who gets a p anyway: the person answered).
    const other = getPublicKey(generateSecretKey());
    const r = await proxy.call("send_message", { content: "hi", reply_to: parent.id, mentions: [npubEncode(other)] });
    assert.ok(!r.isError, textOf(r));
    assert.ok(
      published.at(-1)!.tags.some((t) => t[0] === "p" && t[1] === other),
      "the npub became a hex p tag",
    );
  });

  test("anything in another channel is refused and nothing is published there", async () => {
    const foreign = finalizeEvent(message(chanB, "other room"), ownerSk);
    assert.equal((await ownerPort.publish(foreign)).status, "accepted");
    const before = published.length;
    const r = await proxy.call("send_message", { content: "sneaky", reply_to: foreign.id });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /not in this session's channel/);
    const re = await proxy.call("add_reaction", { event_id: foreign.id, emoji: "👍" });
    assert.equal(re.isError, true);
    assert.equal(published.length, before);
    const inB = await ownerPort.query([{ kinds: [9], "#h": [chanB], authors: [agent] }]);
    assert.equal(inB.length, 0);
  });

  test("bad arguments are a clear isError result", async () => {
    const r = await proxy.call("send_message", { content: "" });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /content is required/);
  });

  test("the daemon runs the merged _Stop over the link, also for some servers only", async () => {
    const all = await session.runHook("_Stop");
    assert.equal(all.verdict, "object");
    assert.equal(all.text, "[ci] CI is red\n\n[approval] waiting for approval");
    assert.deepEqual(
      all.servers.map((s) => [s.name, s.verdict, s.text]),
      [
        ["ci", "object", "CI is red"],
        ["approval", "object", "waiting for approval"],
      ],
    );
    const one = await session.runHook("_Stop", { servers: ["approval"] });
    assert.equal(one.text, "[approval] waiting for approval");
    assert.deepEqual(
      one.servers.map((s) => s.name),
      ["approval"],
    );
  });

  test("a wrong token is refused and logged; that proxy serves no buzz tools", async () => {
    const child = spawn(process.execPath, [CLI, "mcp-proxy"], {
      env: { PATH: process.env.PATH ?? "", BUZZ_BRIDGE_LINK: link.socketPath, BUZZ_BRIDGE_LINK_TOKEN: "not-a-real-token" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let err = "";
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
    assert.equal(code, 2);
    assert.match(err, /link refused/);
    await waitFor(() => cap.lines.some((l) => l.evt === "link.refused"), { timeoutMs: 3000, what: "the refusal to be logged" });
  });

  test("each buzz tool lists the JSON Schema of the zod schema the daemon validates it with", async () => {
    const listed = (await proxy.client.listTools()).tools.filter((t) => (BUZZ_TOOL_NAMES as readonly string[]).includes(t.name));
    assert.deepEqual(listed.map((t) => t.name).sort(), [...BUZZ_TOOL_NAMES].sort());
    for (const t of listed) {
      const { $schema: _, ...generated } = z.toJSONSchema(BUZZ_TOOL_ARGS[t.name as BuzzToolName], { io: "input" });
      assert.deepEqual(t.inputSchema, generated, t.name);
    }
  });

  test("the listed schema accepts and refuses arguments exactly as the daemon does", async () => {
    const schemas = new Map((await proxy.client.listTools()).tools.map((t) => [t.name, t.inputSchema]));
    const ajv = new Ajv({ strict: false });
    const parent = finalizeEvent(message(chanA, "@agent schema check", { mentions: [agent] }), ownerSk);
    assert.equal((await ownerPort.publish(parent)).status, "accepted");
    const pubkeys = Array.from({ length: 51 }, () => getPublicKey(generateSecretKey()));
    const cases: { tool: BuzzToolName; args: Record<string, unknown>; accepted: boolean }[] = [
      { tool: "send_message", args: { content: "npub mention", mentions: [npubEncode(owner)] }, accepted: true },
      { tool: "send_message", args: { content: "too many", mentions: pubkeys }, accepted: false },
      { tool: "send_message", args: { content: "not a key", mentions: ["@owner"] }, accepted: false },
      { tool: "add_reaction", args: { event: parent.id, emoji: "👍" }, accepted: true },
      { tool: "add_reaction", args: { event_id: parent.id.toUpperCase(), emoji: "👍" }, accepted: false },
      { tool: "get_thread", args: { event: parent.id }, accepted: true },
      { tool: "get_messages", args: { limit: 101 }, accepted: false },
    ];
    for (const c of cases) {
      const what = `${c.tool} ${JSON.stringify(c.args).slice(0, 120)}`;
      const schema = schemas.get(c.tool);
      assert.ok(schema, c.tool);
      assert.equal(ajv.validate(schema, c.args), c.accepted, `the listed schema on ${what}: ${ajv.errorsText()}`);
      const r = await proxy.call(c.tool, c.args);
      assert.equal(!r.isError, c.accepted, `the daemon on ${what}: ${textOf(r)}`);
      // A refusal names the argument at fault, so it is the argument check and not the relay.
      if (!c.accepted) assert.match(textOf(r), new RegExp(`${c.tool}: (mentions|event_id|limit)`), what);
    }
  });

  test("a turn stopped by the owner posts nothing more: its send_message is refused saying so; a running one posts", async () => {
    const stop = new AbortController();
    const mine: Event[] = [];
    const tools = createBuzzTools({
      channel: chanA,
      relay: port,
      onPublished: (ev) => mine.push(ev),
      bindTurn: () => ({
        published: () => undefined,
        release: () => undefined,
        stopped: () => (stop.signal.aborted ? "cancelled" : undefined),
      }),
    });
    await tools.sendMessage({ content: "still working on it" });
    stop.abort("owner");
    await assert.rejects(
      tools.sendMessage({ content: "question: cancel" }),
      /this turn was stopped \(cancelled\): nothing more is posted for it/,
    );
    assert.deepEqual(
      mine.map((e) => e.content),
      ["still working on it"],
    );
    const onRelay = await port.query([{ kinds: [9], authors: [agent], "#h": [chanA] }]);
    assert.ok(!onRelay.some((e) => e.content === "question: cancel"), "nothing of the stopped turn reached the relay");
  });

  test("unregistering disconnects the session", async () => {
    session.unregister();
    await waitFor(() => !session.connected(), { timeoutMs: 3000, what: "disconnect" });
    await assert.rejects(session.runHook("_Stop"), /not connected/);
  });
});
