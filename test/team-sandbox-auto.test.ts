/**
 * `agent.sandbox: auto` (the default) in a team, where bubblewrap cannot run: an agent
 * started unsandboxed would read the other identities' keys (docs/security.md), so the
 * daemon refuses to start, naming what that agent could read and what to do — unless the
 * operator accepted it with `team.allow_unsandboxed: true`, and then the start warns naming
 * it. bubblewrap is made unavailable the way a host without it is: no `bwrap` on the
 * daemon's PATH.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { stringify } from "yaml";
import { World } from "../kit/world.js";
import { teamAgents, teamShared } from "./fixtures/team.js";

/** A PATH with Node on it and nothing else: no bwrap. */
const NO_BWRAP = { PATH: dirname(process.execPath) };

async function teamWithoutBwrap(w: World, extra: Record<string, unknown>): Promise<{ file: string; keyFile: string }> {
  const [, other] = await teamAgents(w, 1);
  const keyFile = join(w.dir, "other.nsec");
  writeFileSync(keyFile, `${other!.nsec}\n`, { mode: 0o600 });
  const file = join(w.dir, "team.yaml");
  writeFileSync(
    file,
    stringify({
      ...teamShared(w, { relay: { presence: false } }),
      ...extra,
      agents: [{ identity: { secret_key: w.agent.nsec } }, { identity: { secret_key_file: keyFile } }],
    }),
  );
  return { file, keyFile };
}

test("auto without bubblewrap in a team: the daemon does not start, and says what the agents could read and what to do", async () => {
  const w = await World.create({ channelName: "team-room" });
  try {
    const { file, keyFile } = await teamWithoutBwrap(w, {});
    const d = await w.startDaemon({}, { configFile: file, env: NO_BWRAP, waitStarted: false });
    const outcome = await d
      .waitLog((l) => l.evt === "team.started")
      .then(
        () => "started",
        () => "exited",
      );
    assert.equal(outcome, "exited", "the team did not start");
    const code = await d.exited;
    assert.notEqual(code, 0, "a start-up failure, so a unit does not take it for a clean stop");
    const out = d.raw();
    assert.match(out, /agent\.sandbox is auto and/);
    assert.ok(out.includes(`key file ${keyFile}`), `names the other agent's key file: ${out.slice(-1500)}`);
    assert.match(out, /team\.allow_unsandboxed: true/);
    assert.match(out, /install bubblewrap/);
  } finally {
    await w.close();
  }
});

test("auto without bubblewrap in a team, accepted with team.allow_unsandboxed: the team starts and warns what its agents can read", async () => {
  const w = await World.create({ channelName: "team-room" });
  try {
    const { file, keyFile } = await teamWithoutBwrap(w, { team: { allow_unsandboxed: true } });
    const d = await w.startDaemon({}, { configFile: file, env: NO_BWRAP, waitStarted: false });
    await d.waitLog((l) => l.evt === "team.started");
    const warned = d.logs.filter((l) => l.evt === "agent.sandbox" && l.state === "unavailable" && String(l.msg).includes(keyFile));
    assert.equal(warned.length, 1, "the agent whose neighbour's key is a file is warned once, naming it");
    const ev = await w.owner.post("@agent still answering?");
    await w.waitReply(ev);
    assert.equal(await d.stop(), 0);
  } finally {
    await w.close();
  }
});
