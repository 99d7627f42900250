/**
 * src/turn/sessions.ts and src/turn/inflight.ts on their own: which agent session serves a
 * scope (reused, replaced, rotated), that its link registration lives exactly as long as
 * the session, and that tool publishes count toward the turn bound at the time. The link
 * is the real one (a unix socket, a real LinkClient as the proxy); the agent pool is a
 * small in-process stand-in (the daemon-level tests drive real agents).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { finalizeEvent, generateSecretKey, nip19, type Event, type EventTemplate } from "nostr-tools";
import type { AcquireOptions, AgentPool, AgentSession, McpSlotContext } from "../src/agent/index.js";
import { silentLogger } from "../src/base/log.js";
import { loadConfigText } from "../src/config/load.js";
import { LinkClient } from "../src/link/client.js";
import { LinkServer } from "../src/link/index.js";
import type { RelayPort } from "../src/relay/port.js";
import type { StandingInput } from "../src/prompt/index.js";
import type { ChannelInfo } from "../src/buzz/directory.js";
import { InflightPublishes } from "../src/turn/inflight.js";
import { sleep, waitFor } from "../kit/wait.js";
import { emptyManifest, fixedBuzzTools } from "./fixtures/link.js";
import { slotHooks, ScopeSessions, spentBudget, type ScopeSession, type SessionIdStore } from "../src/turn/sessions.js";

const CHANNEL: ChannelInfo = { id: "4b1d0c3e-0000-4000-8000-000000000001", name: "build-room", about: "", type: "stream", archived: false };
const STANDING: StandingInput = { channel: { id: CHANNEL.id, name: CHANNEL.name }, persona: "", teamInstructions: "" };
const sk = generateSecretKey();
const config = loadConfigText(
  `identity:\n  secret_key: ${nip19.nsecEncode(generateSecretKey())}\nrelay:\n  url: ws://127.0.0.1:7777\n`,
  "t.yaml",
  {},
).config;

/** An agent session as the registry sees it: alive until killed, and counting idle holds. */
function fakeSession(id: string, o: { resumed?: boolean } = {}) {
  const s = {
    alive: true,
    sessionId: id,
    resumed: o.resumed ?? false,
    standingContextVia: "prompt",
    proc: { pid: 1 },
    holds: 0,
    /** Turns holding the session against eviction (AgentSession.hold). */
    turnHolds: 0,
    model: undefined,
  };
  return Object.assign(s, {
    holdIdle: () => {
      s.holds++;
      return () => void s.holds--;
    },
    hold: () => void s.turnHolds++,
    unhold: () => void s.turnHolds--,
  });
}
type FakeSession = ReturnType<typeof fakeSession>;

/** An unsandboxed agent process that does not speak MCP over HTTP (no link directory: the shared socket). */
const plainProcess: McpSlotContext = {
  agentHttp: false,
  offline: false,
  cwd: "/",
  env: {},
  wrap: (server) => ({ command: server.command, args: server.args, cwd: server.cwd ?? "/" }),
};

/** The pool's part the registry uses: one session per scope, opened on acquire. */
function fakePool(o: { fail?: boolean } = {}) {
  const live = new Map<string, FakeSession>();
  const acquired: Array<{ scope: string; opts: AcquireOptions; env: Record<string, string> }> = [];
  const rotated: Array<{ scope: string; reason: string }> = [];
  let n = 0;
  const pool: Pick<AgentPool, "acquire" | "session" | "rotate"> = {
    acquire: async (scope, opts) => {
      const slot = typeof opts.mcpEnv === "function" ? await opts.mcpEnv(plainProcess) : { transport: "stdio" as const, env: opts.mcpEnv };
      assert.equal(slot.transport, "stdio", "an agent without MCP over HTTP gets the stdio proxy");
      const env = slot.transport === "stdio" ? slot.env : {};
      acquired.push({ scope, opts, env });
      if (o.fail) throw new Error("agent would not start");
      const s = fakeSession(opts.previousSessionId ?? `session-${++n}`, { resumed: opts.previousSessionId !== undefined });
      live.set(scope, s);
      return s as unknown as AgentSession;
    },
    session: (scope) => {
      const s = live.get(scope);
      return s?.alive ? (s as unknown as AgentSession) : undefined;
    },
    rotate: async (scope, reason = "owner") => {
      rotated.push({ scope, reason });
      return live.delete(scope);
    },
  };
  return { pool, live, acquired, rotated };
}

/** A relay that signs with a test key, accepts and finds by id; `hold` keeps publishes waiting until released. */
function fakeRelay() {
  let gate: Promise<void> = Promise.resolve();
  let open = () => {};
  const stored = new Map<string, Event>();
  const relay: RelayPort = {
    sign: (t: EventTemplate) => finalizeEvent(t, sk),
    publish: async (ev) => {
      await gate;
      stored.set(ev.id, ev);
      return { status: "accepted" };
    },
    query: async (filters) => (filters[0]?.ids ?? []).flatMap((id) => stored.get(id) ?? []),
  };
  return {
    relay,
    hold: () => (gate = new Promise<void>((r) => (open = r))),
    release: () => open(),
  };
}

function memoryIds(): SessionIdStore & { map: Map<string, string> } {
  const map = new Map<string, string>();
  return { map, get: (k) => map.get(k), save: (k, v) => void map.set(k, v), forget: (k) => void map.delete(k) };
}

async function withLink(fn: (link: LinkServer) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "turn-sessions-"));
  const link = new LinkServer({ socketPath: join(dir, "link.sock"), logger: silentLogger() });
  await link.start();
  try {
    await fn(link);
  } finally {
    await link.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const connect = (env: Record<string, string>) => LinkClient.connect(env.BUZZ_BRIDGE_LINK!, env.BUZZ_BRIDGE_LINK_TOKEN!);

test("in-flight publishes: settled waits for the last release; a release twice counts once", async () => {
  const inflight = new InflightPublishes();
  let settled = false;
  await inflight.settled();
  const a = inflight.begin();
  const b = inflight.begin();
  const waiting = inflight.settled().then(() => (settled = true));
  a();
  a();
  await sleep(0); // to show a second release of the same publish does NOT end the wait
  assert.equal(settled, false);
  b();
  await waiting;
  await inflight.settled();
});

test("a scope's session is reused while its agent lives; a dead one is replaced and its link token revoked", async () => {
  await withLink(async (link) => {
    const { pool, live, acquired } = fakePool();
    const ids = memoryIds();
    const sessions = new ScopeSessions({ config: () => config, pool, link, relay: fakeRelay().relay, ids });
    const first = await sessions.open({ key: "chan/root", root: "ab".repeat(32) }, CHANNEL, STANDING, silentLogger());
    assert.equal(await sessions.open({ key: "chan/root" }, CHANNEL, STANDING, silentLogger()), first);
    assert.equal(acquired.length, 1);
    assert.equal(acquired[0]!.opts.title, "#build-room · thread abababab");
    assert.equal(ids.map.get("chan/root"), "session-1");
    assert.equal(first.prompt.standingSent, false);

    // Each open is a turn's: the session comes back held (the pool's acquire holds a new one), until the turn lets go.
    assert.deepEqual(
      acquired.map((a) => a.opts.hold),
      [true],
    );
    assert.equal(live.get("chan/root")!.turnHolds, 1, "the reused session is held for the second turn");
    live.get("chan/root")!.alive = false;
    const second = await sessions.open({ key: "chan/root" }, CHANNEL, STANDING, silentLogger());
    assert.notEqual(second, first);
    assert.equal(acquired.length, 2);
    // The stored id is offered again (the agent may resume it); a resumed session has its standing context.
    assert.equal(acquired[1]!.opts.previousSessionId, "session-1");
    assert.equal(second.prompt.standingSent, true);
    await assert.rejects(connect(acquired[0]!.env), /link refused/);
    (await connect(acquired[1]!.env)).close();
  });
});

test("a session that fails to open leaves no link registration behind", async () => {
  await withLink(async (link) => {
    const { pool, acquired } = fakePool({ fail: true });
    const sessions = new ScopeSessions({ config: () => config, pool, link, relay: fakeRelay().relay });
    await assert.rejects(sessions.open({ key: "chan" }, CHANNEL, STANDING, silentLogger()), /would not start/);
    assert.equal(sessions.get("chan"), undefined);
    await assert.rejects(connect(acquired[0]!.env), /link refused/);
  });
});

test("rotation: a spent budget at once, else after max_turns_per_session turns; rotate ends matching scopes only", async () => {
  assert.equal(spentBudget("max_tokens"), "max_tokens");
  assert.equal(spentBudget("max_turn_requests"), "max_turn_requests");
  assert.equal(spentBudget("end_turn"), undefined);
  await withLink(async (link) => {
    const { pool, rotated, acquired } = fakePool();
    const ids = memoryIds();
    const sessions = new ScopeSessions({ config: () => config, pool, link, relay: fakeRelay().relay, ids });
    const ss = await sessions.open({ key: "a/1" }, CHANNEL, STANDING, silentLogger());
    await sessions.open({ key: "a/2" }, CHANNEL, STANDING, silentLogger());
    await sessions.open({ key: "b" }, CHANNEL, STANDING, silentLogger());
    assert.equal(sessions.turnDone(ss, undefined, 2), undefined);
    assert.equal(sessions.turnDone(ss, undefined, 2), "max_turns");
    assert.equal(sessions.turnDone(ss, "max_tokens", 2), "max_tokens");
    assert.equal(sessions.turnDone(ss, undefined, 0), undefined);
    assert.equal(ss.turns, 4);

    assert.equal(await sessions.rotate((k) => k.startsWith("a/")), 2);
    assert.deepEqual(rotated, [
      { scope: "a/1", reason: "owner" },
      { scope: "a/2", reason: "owner" },
    ]);
    assert.deepEqual([...ids.map.keys()], ["b"]);
    await assert.rejects(connect(acquired[0]!.env), /link refused/);
    // Already ended (a failed turn rotates it first): nothing more to rotate.
    await sessions.rotateIfDue("a/1", "max_turns");
    await sessions.rotateIfDue("b", undefined);
    assert.equal(rotated.length, 2);
    await sessions.rotateIfDue("b", "max_turns");
    assert.deepEqual(rotated[2], { scope: "b", reason: "max_turns" });
  });
});

test("tool publishes count toward the turn bound at the time: replies recorded (before publishing too), reactions not, and the turn's end waits for them", async () => {
  await withLink(async (link) => {
    const { pool, acquired, live } = fakePool();
    const relay = fakeRelay();
    const recorded: Array<[number, string]> = [];
    const recordBeforePublish = async (turnId: number, id: string) => void recorded.push([turnId, id]);
    const sessions = new ScopeSessions({ config: () => config, pool, link, relay: relay.relay, recordBeforePublish });
    const ss: ScopeSession = await sessions.open({ key: "chan" }, CHANNEL, STANDING, silentLogger());
    const proxy = await connect(acquired[0]!.env);
    try {
      const inflight = new InflightPublishes();
      const published = new Set<string>();
      const mention = finalizeEvent({ kind: 9, created_at: 1000, content: "a question", tags: [["h", CHANNEL.id]] }, generateSecretKey());
      await relay.relay.publish(mention);
      ss.current = {
        turnId: 7,
        published,
        anchor: mention.id,
        inflight,
        messages: { sent: 0, max: 20 },
        stopped: new AbortController().signal,
      };
      relay.hold();
      const sending = proxy.callBuzzTool("send_message", { content: "the answer" }) as Promise<{ event_id: string }>;
      sending.catch(() => {});
      // The publish on its way holds the agent's idle timer and the turn's end.
      await waitFor(() => live.get("chan")!.holds === 1, { what: "the send_message publish to be on its way" });
      let settled = false;
      const end = inflight.settled().then(() => (settled = true));
      await sleep(20); // to show the turn's end does NOT come while the publish is held
      assert.equal(settled, false);
      relay.release();
      const { event_id } = await sending;
      await end;
      // A send_message without reply_to answers the turn's anchor.
      const [reply] = await relay.relay.query([{ ids: [event_id] }]);
      assert.ok(reply?.tags.some((t) => t[0] === "e" && t[1] === mention.id));
      assert.deepEqual([...published], [event_id]);
      assert.deepEqual(recorded, [[7, event_id]]);
      assert.equal(live.get("chan")!.holds, 0);

      await proxy.callBuzzTool("add_reaction", { event_id, emoji: "👍" });
      assert.deepEqual([...published], [event_id]);
      assert.equal(recorded.length, 1);
      await inflight.settled();

      // With no turn bound, a publish counts toward nothing.
      ss.current = undefined;
      await proxy.callBuzzTool("send_message", { content: "later" });
      assert.deepEqual([...published], [event_id]);
    } finally {
      proxy.close();
    }
  });
});

test("the session's hooks wait for a proxy that connects late, and let the turn go when none connects", async () => {
  await withLink(async (link) => {
    const manifest = emptyManifest();
    const tools = fixedBuzzTools();
    const late = link.register({ sessionKey: "late", manifest, tools });
    // The hook's wait for a proxy is far longer than the test may take: an answer at all shows
    // it was woken by the proxy's hello, not by the end of the wait.
    let answered: Awaited<ReturnType<ReturnType<typeof slotHooks>["runHook"]>> | undefined;
    const asked = slotHooks(late, silentLogger(), 3_600_000).runHook("_Stop");
    void asked.then((r) => (answered = r));
    await sleep(50); // the proxy connects while the hook already waits for it
    const proxy = await connect(late.env);
    proxy.onRunHook(async (p) => ({ text: `[x] ${p.name}`, verdict: "object", ms: 1, servers: [] }));
    assert.equal(
      (await waitFor(() => answered, { timeoutMs: 60_000, what: "the hook's answer once the proxy connected" })).verdict,
      "object",
    );
    proxy.close();

    const never = link.register({ sessionKey: "never", manifest, tools });
    assert.equal(await never.whenConnected(30), false);
    assert.deepEqual(await slotHooks(never, silentLogger(), 30).runHook("_Stop"), { text: "", verdict: "allow", ms: 0, servers: [] });
    // Unregistering ends a wait at once.
    const waiting = never.whenConnected(60_000);
    never.unregister();
    assert.equal(await waiting, false);
  });
});
