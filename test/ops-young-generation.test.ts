/**
 * `buzz-bridge run` keeps V8's young generation at its starting size, so the idle daemon
 * does not hold the 32 MiB V8 would otherwise keep after start-up (bench figure 7), unless
 * whoever started node sized it themselves. Real parts: dev relay, `buzz-bridge run`
 * subprocess (demo agent as its warm spare), its own `/metrics`.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { youngGenerationChosen } from "../src/ops/young-generation.js";
import { World } from "./fixtures/world.js";

let w: World;
before(async () => {
  w = await World.create({ channelName: "memory-room" });
});
after(() => w.close());

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** The young generation's committed size in bytes, from the daemon's own `/metrics`. */
async function newSpaceBytes(metricsUrl: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const m = /^nodejs_heap_space_size_total_bytes\{space="new"\} (\S+)$/m.exec(text);
  assert.ok(m, "/metrics reports the new space");
  return Number(m[1]);
}

test("after start-up the daemon's young generation is still two 1 MiB semi-spaces", async () => {
  const port = await freePort();
  const d = await w.startDaemon({ http: { listen: `127.0.0.1:${port}` }, log: { level: "info" } });
  try {
    // Start-up (modules, channel discovery, the warm agent) is done; a mention exercises the turn path too.
    const asked = await w.owner.post("@agent what is this room for?");
    await w.waitReplies(asked);
    assert.equal(await newSpaceBytes(`http://127.0.0.1:${port}/metrics`), 2 * 1048576);
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test("a semi-space size or growth factor given to node (flag or NODE_OPTIONS) is left as given", () => {
  assert.equal(youngGenerationChosen([], undefined), false);
  assert.equal(youngGenerationChosen(["--expose-gc", "--import", "x.js"], "--enable-source-maps"), false);
  assert.equal(youngGenerationChosen(["--max-semi-space-size=16"], undefined), true);
  assert.equal(youngGenerationChosen(["--max_semi_space_size=8"], undefined), true);
  assert.equal(youngGenerationChosen([], "--enable-source-maps --min-semi-space-size=4"), true);
  assert.equal(youngGenerationChosen([], "--semi-space-growth-factor=2"), true);
  assert.equal(youngGenerationChosen(["--max-old-space-size=512"], undefined), false);
});
