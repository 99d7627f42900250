/**
 * One agent's key never reaches another's agents (docs/configuration.md "Several agents in
 * one daemon"): in a team, a bubblewrapped agent (test/fixtures/escape-agent.mjs) tries to
 * read the other agent's key file and queue.db, to list its working directory, and to reach
 * the team's HTTP endpoint on the host's loopback. Each attempt fails (loopback: unless the
 * daemon warned that the agent runs on the host's network); with `agent.sandbox: off` the
 * same attempts get through (the test can fail).
 *
 * Under /var/tmp, not the temp dir: the sandbox's private /tmp would hide the world.
 * bubblewrap must be installed; `agent.sandbox: bubblewrap` fails (never skips) without it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { stringify } from "yaml";
import { REPO, World } from "../kit/world.js";
import { teamAgents, teamShared } from "./fixtures/team.js";
import { waitFor } from "../kit/wait.js";
import { mentionSettled } from "../kit/settle.js";

const ESCAPE_AGENT = join(REPO, "test", "fixtures", "escape-agent.mjs");

async function attempts(sandbox: "bubblewrap" | "off"): Promise<{ r: Record<string, string>; hostNetworkWarned: boolean }> {
  const w = await World.create({ baseDir: "/var/tmp", channelName: "team-room" });
  try {
    const [, other] = await teamAgents(w, 1);
    const otherPk = other!.pk;
    const keyFile = join(w.dir, "other.nsec");
    writeFileSync(keyFile, `${other!.nsec}\n`, { mode: 0o600 });
    const otherWork = join(w.dir, "other-work", "room");
    mkdirSync(otherWork, { recursive: true });
    writeFileSync(join(otherWork, "plan.txt"), "the other agent's plan\n");
    const file = join(w.dir, "team.yaml");
    writeFileSync(
      file,
      stringify({
        ...teamShared(w, { relay: { presence: false }, http: { listen: "127.0.0.1:0" } }),
        // An unsandboxed entry in a team is refused unless the operator accepts it.
        ...(sandbox === "off" ? { team: { allow_unsandboxed: true } } : {}),
        agents: [
          { identity: { secret_key: w.agent.nsec }, agent: { command: process.execPath, args: [ESCAPE_AGENT], sandbox } },
          { identity: { secret_key_file: keyFile }, agent: { cwd: join(w.dir, "other-work", "{channel}") } },
        ],
      }),
    );
    const d = await w.startDaemon({}, { configFile: file, waitStarted: false });
    await d.waitLog((l) => l.evt === "team.started");
    const targets = {
      key: keyFile,
      queue: join(w.dir, "state", "agents", otherPk.slice(0, 16), "queue.db"),
      otherCwd: otherWork,
      otherFile: "plan.txt",
      daemonHttp: Number(new URL(String(d.logs.find((l) => l.evt === "http.listening")!.url)).port),
    };
    const ev: Event = await w.owner.post(`@agent #escape ${JSON.stringify(targets)}`);
    const mine = () => d.logs.filter((l) => l.agent === w.agent.pk.slice(0, 16));
    await waitFor(() => mentionSettled(mine(), ev.id), { what: "the escape attempt's turn to end" });
    const replies = await w.query({ kinds: [9], authors: [w.agent.pk], "#e": [ev.id] });
    assert.equal(replies.length, 1, "one reply");
    assert.equal(await d.stop(), 0);
    if (sandbox === "off")
      assert.ok(
        d.logs.some((l) => l.evt === "config.warning" && String(l.msg).includes("runs unsandboxed") && String(l.msg).includes(keyFile)),
        "the start warns that the unsandboxed agent can read the other's key file",
      );
    return {
      r: JSON.parse(replies[0]!.content) as Record<string, string>,
      hostNetworkWarned: d.logs.some((l) => l.evt === "agent.sandbox" && l.state === "host-network"),
    };
  } finally {
    await w.close();
  }
}

test("a sandboxed agent in a team cannot read the other agent's key file or queue.db, list its working directory, or reach the team's HTTP endpoint", async () => {
  const { r, hostNetworkWarned } = await attempts("bubblewrap");
  for (const name of ["key", "queue", "otherCwd"]) assert.match(r[name]!, /^failed: /, `${name}: the sandbox let it through: ${r[name]}`);
  // Out of reach in a network of its own; on the host's network only where the daemon said so.
  const hostNetwork = (r.ifaces as unknown as string[]).some((i) => i !== "lo" && i !== "tap0");
  assert.equal(
    hostNetwork,
    hostNetworkWarned,
    `interfaces ${String(r.ifaces)}; the daemon warned of the host's network: ${hostNetworkWarned}`,
  );
  assert.match(r.daemonHttp!, hostNetwork ? /^ok: / : /^failed: /, `daemonHttp: ${r.daemonHttp}`);
  assert.equal(r.cwd, "ok: written", "the agent writes its own cwd");
});

test("with agent.sandbox: off the same agent reads the other's key and queue.db and lists its work (the test can fail)", async () => {
  const { r } = await attempts("off");
  assert.match(r.key!, /^ok: nsec1/);
  assert.match(r.queue!, /^ok: SQLite format/);
  assert.match(r.otherCwd!, /^ok: /);
  assert.match(r.daemonHttp!, /^ok: /);
});
