/**
 * `buzz-bridge run` applies its V8 memory settings (src/app/http/v8-memory.ts): the young
 * generation stays at its starting size, so the idle daemon does not hold the 32 MiB V8
 * would otherwise keep after start-up (bench figure 7), unless whoever started node chose
 * the setting themselves. Real parts: dev relay, `buzz-bridge run`
 * subprocess (demo agent as its warm spare), its own `/metrics`.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { daemonV8Flags } from "../src/app/http/v8-memory.js";
import { World } from "../kit/world.js";
import { freePort } from "../kit/net.js";

let w: World;
before(async () => {
  w = await World.create({ channelName: "memory-room" });
});
after(() => w.close());

/** The young generation's committed size in bytes, from the daemon's own `/metrics`. */
async function newSpaceBytes(metricsUrl: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const m = /^nodejs_heap_space_size_total_bytes\{space="new"\} (\S+)$/m.exec(text);
  assert.ok(m, "/metrics reports the new space");
  return Number(m[1]);
}

test("after start-up and a turn the daemon's young generation has not grown past two 1 MiB semi-spaces", async () => {
  const port = await freePort();
  const d = await w.startDaemon({ http: { listen: `127.0.0.1:${port}` }, log: { level: "info" } });
  try {
    // Start-up (modules, channel discovery, the warm agent) is done; a mention exercises the turn path too.
    const asked = await w.owner.post("@agent what is this room for?");
    await w.waitReply(asked);
    // Two 1 MiB semi-spaces at most (V8 may shrink them further when idle); V8's default grows them to 32 MiB here.
    const bytes = await newSpaceBytes(`http://127.0.0.1:${port}/metrics`);
    assert.ok(bytes <= 2 * 1048576, `young generation ${bytes} bytes, expected at most 2 MiB`);
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test("a setting given to node (flag or NODE_OPTIONS) is left as given; the others still apply", () => {
  const both = ["--semi-space-growth-factor=1", "--heap-growing-percent=20"];
  assert.deepEqual(daemonV8Flags([], undefined), both);
  assert.deepEqual(daemonV8Flags(["--expose-gc", "--import", "x.js", "--max-old-space-size=512"], "--enable-source-maps"), both);
  assert.deepEqual(daemonV8Flags(["--max-semi-space-size=16"], undefined), ["--heap-growing-percent=20"]);
  assert.deepEqual(daemonV8Flags(["--max_semi_space_size=8"], undefined), ["--heap-growing-percent=20"]);
  assert.deepEqual(daemonV8Flags([], "--enable-source-maps --min-semi-space-size=4"), ["--heap-growing-percent=20"]);
  assert.deepEqual(daemonV8Flags([], "--semi-space-growth-factor=2"), ["--heap-growing-percent=20"]);
  assert.deepEqual(daemonV8Flags(["--heap-growing-percent=50"], undefined), ["--semi-space-growth-factor=1"]);
  assert.deepEqual(daemonV8Flags(["--max-semi-space-size=16", "--heap-growing-percent=0"], undefined), []);
});
