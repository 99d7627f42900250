import { test } from "node:test";
import assert from "node:assert/strict";
import { isAbsolute } from "node:path";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { linkSocketPath, LinkServer } from "../../src/link/server.js";
import { LinkClient } from "../../src/link/client.js";
import { silentLogger } from "../../src/base/log.js";
import { sleep } from "../../kit/wait.js";
import { emptyManifest, fixedBuzzTools } from "../fixtures/link.js";

test("the socket path handed to proxies is absolute (the agent runs them elsewhere)", () => {
  const p = linkSocketPath("./buzz-bridge-state/link.sock");
  assert.ok(isAbsolute(p));
  assert.ok(p.endsWith("buzz-bridge-state/link.sock"));
});

test("a state_dir too deep for a unix socket path moves the socket to the temp dir, deterministically", () => {
  const deep = "/" + "d".repeat(150) + "/link.sock";
  const p = linkSocketPath(deep);
  assert.ok(Buffer.byteLength(p) <= 100);
  assert.equal(p, linkSocketPath(deep));
});

test("register, connect with the token, fetch the manifest; a revoked token is refused", async () => {
  const dir = mkdtempSync(join(tmpdir(), "link-sock-"));
  const server = new LinkServer({ socketPath: join(dir, "state", "link.sock"), logger: silentLogger() });
  await server.start();
  try {
    assert.equal(statSync(server.socketPath).mode & 0o777, 0o600);
    const manifest = emptyManifest();
    const tools = fixedBuzzTools();
    const s = server.register({ sessionKey: "k", manifest, tools });
    const client = await LinkClient.connect(s.env.BUZZ_BRIDGE_LINK!, s.env.BUZZ_BRIDGE_LINK_TOKEN!);
    assert.deepEqual(client.manifest, manifest);
    assert.deepEqual(await client.callBuzzTool("send_message", { content: "hi" }), { event_id: "e".repeat(64) });
    assert.deepEqual(await client.callBuzzTool("get_messages", {}), [], "a list answer crosses as it is");
    await assert.rejects(client.callBuzzTool("send_message", { content: "hi", reply_to: "not-hex" }), {
      message: "send_message: reply_to: expected a 64-character lowercase hex event id / pubkey",
    });
    // The daemon may ask for a hook as soon as the proxy said hello, before the proxy is built.
    assert.ok(s.connected());
    const early = s.runHook("_Stop");
    await sleep(100); // the hook request waits while no handler is set; it is answered once one is
    client.onRunHook(async (p) => ({ text: `[x] ${p.name}`, verdict: "object", ms: 1, servers: [] }));
    assert.equal((await early).text, "[x] _Stop");
    client.onRunHook(async () => {
      throw new Error("no servers answer");
    });
    await assert.rejects(s.runHook("_PostCompact"), { message: "session k: _PostCompact over the link failed: no servers answer" });
    client.close();
    s.unregister();
    await assert.rejects(LinkClient.connect(s.env.BUZZ_BRIDGE_LINK!, s.env.BUZZ_BRIDGE_LINK_TOKEN!), {
      message: "link refused: unknown or revoked token",
    });
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a session's own socket (in its process's link directory) accepts that session's token only, and goes with unregister", async () => {
  const dir = mkdtempSync(join(tmpdir(), "link-own-"));
  const server = new LinkServer({ socketPath: join(dir, "state", "link.sock"), logger: silentLogger() });
  await server.start();
  try {
    const manifest = emptyManifest();
    const tools = fixedBuzzTools();
    const a = server.register({ sessionKey: "a", manifest, tools });
    const b = server.register({ sessionKey: "b", manifest, tools });
    const procDir = join(dir, "state", "link", "1");
    mkdirSync(procDir, { recursive: true });
    const env = await a.listen(procDir);
    assert.equal(env.BUZZ_BRIDGE_LINK, join(procDir, "link.sock"));
    assert.equal(env.BUZZ_BRIDGE_LINK_TOKEN, a.env.BUZZ_BRIDGE_LINK_TOKEN, "the same token as on the shared socket");
    assert.equal(statSync(env.BUZZ_BRIDGE_LINK!).mode & 0o777, 0o600);
    const own = await LinkClient.connect(env.BUZZ_BRIDGE_LINK!, env.BUZZ_BRIDGE_LINK_TOKEN!);
    assert.deepEqual(await own.callBuzzTool("send_message", { content: "hi" }), { event_id: "e".repeat(64) });
    own.close();
    await assert.rejects(
      LinkClient.connect(env.BUZZ_BRIDGE_LINK!, b.env.BUZZ_BRIDGE_LINK_TOKEN!),
      { message: "link refused: unknown or revoked token" },
      "another session's token is refused there",
    );
    a.unregister();
    assert.equal(existsSync(env.BUZZ_BRIDGE_LINK!), false, "the socket is removed with the session");
    b.unregister();
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
