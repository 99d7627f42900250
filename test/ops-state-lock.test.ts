/**
 * One daemon per state_dir. A second `run` on the same directory exits 2 naming the
 * holder's pid (log evt `state.locked`) and leaves the first daemon's link socket alone,
 * so the first keeps answering through `send_message`; a SIGKILLed daemon's lock does not
 * block the next start; `doctor` reports a held lock.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { World } from "../kit/world.js";
import { runCli } from "./fixtures/cli.js";

let w: World;
before(async () => {
  w = await World.create();
});
after(() => w.close());

// reply_fallback off: a reply can only come through the proxy's send_message, over link.sock.
const overrides = () => ({ defaults: { reply_fallback: "off" }, relay: { presence: false } });

test("a second daemon on the same state_dir exits 2 naming the first one's pid; the first keeps answering", async () => {
  const configFile = w.writeConfig(overrides(), "lock.yaml");
  const first = await w.startDaemon({}, { configFile });
  const second = await w.startDaemon({}, { configFile, waitStarted: false });
  assert.equal(await second.exited, 2, second.raw().slice(-2000));
  const locked = second.logs.find((l) => l.evt === "state.locked");
  assert.ok(locked, second.raw().slice(-2000));
  assert.equal(locked.holder_pid, first.proc.pid);
  assert.match(String(locked.msg), new RegExp(`in use by another buzz-bridge daemon \\(pid ${first.proc.pid}\\)`));
  assert.ok(!second.logs.some((l) => l.evt === "link.listening" || l.evt === "daemon.started"), "the second daemon touched nothing");

  assert.ok(existsSync(join(w.dir, "state", "link.sock")), "the first daemon's link socket is still there");
  const ev = await w.owner.post("@agent are you still there?");
  const reply = await w.waitReply(ev);
  assert.ok(reply, "answered through send_message");
  assert.ok(!first.logs.some((l) => l.evt === "proxy.link_failed"), "no session lost its link");
  assert.equal(await first.stop(), 0);
});

test("a SIGKILLed daemon's lock does not block the next start, and doctor reports who holds it", async () => {
  const configFile = w.writeConfig(overrides(), "killed.yaml");
  const killed = await w.startDaemon({}, { configFile });
  killed.proc.kill("SIGKILL");
  await killed.exited;
  const next = await w.startDaemon({}, { configFile });
  assert.ok(!next.logs.some((l) => l.evt === "state.locked"));
  const ev = await w.owner.post("@agent back after a crash?");
  await w.waitReply(ev);

  const r = await runCli(["doctor", "-c", configFile, "--timeout", "30s"]);
  assert.match(r.stdout, /^✓ relay\s/m, "doctor reaches the relay the daemon is on");
  const state = r.stdout.split("\n").find((l) => /^[✓✗] state\s/.test(l));
  assert.ok(state, r.stdout);
  assert.match(
    state,
    new RegExp(
      `^✓ state\\s+${join(w.dir, "state")} is writable and in use by a running daemon \\(pid ${next.proc.pid}: \\S+ \\S+cli\\.js run -c \\S+killed\\.yaml\\); a second \`run\` on it would exit 2$`,
    ),
  );
  assert.equal(await next.stop(), 0);

  const after = await runCli(["doctor", "-c", configFile, "--timeout", "30s"]);
  assert.match(after.stdout, /^✓ state\s+.* is writable; no daemon is using it$/m, after.stdout);
});
