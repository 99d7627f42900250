/**
 * Channels whose names slug alike ("secret" and "Secret!") get rooms of their own: a
 * working directory and a sandboxed HOME per channel id (docs/security.md). A fixture agent
 * (test/fixtures/escape-agent.mjs, `#room`) reports what an earlier session left in its cwd
 * and HOME, then leaves a word there itself. Directories an older version named after the
 * channel's name alone move to the per-id names at start; one that two channels' names
 * slug to is left where it is, for the operator.
 *
 * Under /var/tmp, not the temp dir: the sandbox's private /tmp would hide the world.
 * bubblewrap must be installed; `agent.sandbox: bubblewrap` fails (never skips) without it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { World, REPO } from "../kit/world.js";
import { channelDirName, migrateChannelDirs } from "../src/agent/index.js";

const ESCAPE_AGENT = join(REPO, "test", "fixtures", "escape-agent.mjs");

test("a private 'secret' and a public 'Secret!' share no cwd and no HOME; a channel's old directories move to its per-id name", async () => {
  const w = await World.create({ baseDir: "/var/tmp", channelName: "secret", type: "private" });
  try {
    const pub = await w.addChannel({ name: "Secret!", type: "stream" });
    const solo = await w.addChannel({ name: "solo-room" });
    // What an older version left: directories named after the channel names alone.
    const work = join(w.dir, "work");
    const homes = join(w.dir, "state", "homes");
    for (const [dir, word] of [
      [join(work, "secret"), "shared-before"],
      [join(work, "solo-room"), "solo-before"],
      [join(homes, "solo-room"), "solo-home-before"],
    ] as const) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "room.txt"), `${word}\n`);
    }
    const d = await w.startDaemon({ agent: { command: process.execPath, args: [ESCAPE_AGENT], sandbox: "bubblewrap" } });
    const visit = async (channel: string, word: string) => {
      const ev: Event = await w.owner.post(`@agent #room ${word}`, { channel });
      const [reply] = await w.waitReplies(ev, 1, 30_000);
      return JSON.parse(reply!.content) as { cwd: string; home: string };
    };

    assert.deepEqual(await visit(w.channel, "private-words"), { cwd: "failed: ENOENT", home: "failed: ENOENT" });
    assert.deepEqual(
      await visit(pub, "public-words"),
      { cwd: "failed: ENOENT", home: "failed: ENOENT" },
      "the public channel sees nothing the private one left",
    );
    assert.deepEqual(
      await visit(solo, "solo-after"),
      { cwd: "ok: solo-before", home: "ok: solo-home-before" },
      "a channel's own old directories became its new ones",
    );

    const secretDir = channelDirName({ id: w.channel, name: "secret" });
    assert.equal(readFileSync(join(work, secretDir, "room.txt"), "utf8"), "private-words\n");
    assert.equal(readFileSync(join(homes, secretDir, "room.txt"), "utf8"), "private-words\n");
    assert.equal(readFileSync(join(work, "secret", "room.txt"), "utf8"), "shared-before\n", "the shared old directory is left alone");
    const kept = d.logs.filter((l) => l.evt === "agent.dir_kept");
    assert.deepEqual(
      kept.map((l) => [l.dir, new Set(l.channels as string[])]),
      [[join(work, "secret"), new Set([w.channel, pub])]],
    );
    assert.deepEqual(
      d.logs
        .filter((l) => l.evt === "agent.dir_migrated")
        .map((l) => [l.from, l.to])
        .sort(),
      [
        [join(homes, "solo-room"), join(homes, channelDirName({ id: solo, name: "solo-room" }))],
        [join(work, "solo-room"), join(work, channelDirName({ id: solo, name: "solo-room" }))],
      ],
    );
  } finally {
    await w.close();
  }
});

test("a channel named like another channel's per-id directory never takes that directory over", () => {
  const root = mkdtempSync(join(tmpdir(), "bb-rooms-"));
  try {
    const secret = { id: "6f1c2a4e-0000-4000-8000-00000000aaaa", name: "secret" };
    const mimic = { id: "6f1c2a4e-0000-4000-8000-00000000bbbb", name: channelDirName(secret) };
    const theirs = join(root, "work", channelDirName(secret));
    mkdirSync(theirs, { recursive: true });
    writeFileSync(join(theirs, "room.txt"), "private\n");
    // Known or not: with the secret channel among the channels, and without it (the agent left it).
    for (const channels of [[secret, mimic], [mimic]]) {
      const r = migrateChannelDirs({ cwdTemplate: join(root, "work", "{channel}"), stateDir: join(root, "state"), channels });
      assert.deepEqual(r, { moved: [], kept: [] });
      assert.equal(readFileSync(join(theirs, "room.txt"), "utf8"), "private\n");
    }
    assert.notEqual(channelDirName(mimic), channelDirName(secret));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
