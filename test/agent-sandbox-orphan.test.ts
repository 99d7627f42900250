/**
 * A sandboxed agent with a network of its own starts in two steps (src/agent/sandbox-net.ts):
 * bubblewrap sets the sandbox up and waits on `--block-fd` while slirp4netns gives it its
 * network; then the daemon lets it go on. A daemon that dies in between (SIGKILLed, crashed,
 * its machine's OOM killer) must leave nothing waiting: no systemd cgroup cleans up after a
 * daemon run by hand, and a waiting sandbox holds its folders and a process slot for ever.
 *
 * The real bubblewrap; a stand-in for slirp4netns that never says it is ready (so the moment
 * is held, not raced for) and ends when its exit-fd closes, as the real one does. The daemon
 * is a small process running the daemon's own spawnWithPrivateNetwork from dist/.
 * bubblewrap must be installed: this test fails, never skips, without it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { REPO } from "../kit/world.js";
import { waitFor } from "../kit/wait.js";

/** The pids of the processes whose command line names `mark`, but `except` (the daemon's, whose script names it too). */
function processesNaming(mark: string, except?: number): number[] {
  return readdirSync("/proc")
    .filter((n) => /^\d+$/.test(n) && Number(n) !== except)
    .filter((n) => {
      try {
        return readFileSync(`/proc/${n}/cmdline`, "utf8").includes(mark);
      } catch {
        return false;
      }
    })
    .map(Number);
}

test("a daemon killed while its agent's sandbox waits for its network leaves no bubblewrap behind", async () => {
  const dir = mkdtempSync(join(tmpdir(), "bb-orphan-"));
  const mark = `bb-orphan-${randomUUID()}`;
  const started = join(dir, "slirp-started");
  const slirp = join(dir, "slirp4netns");
  writeFileSync(slirp, `#!/bin/sh\n: > '${started}'\nexec cat <&4 >/dev/null\n`, { mode: 0o755 });
  const bwrapArgs = [
    ...["--unshare-user", "--unshare-pid", "--unshare-net", "--die-with-parent"],
    ...["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--dir", `/tmp/${mark}`],
    ...["--info-fd", "3", "--block-fd", "4", "--", "cat"],
  ];
  const daemon = `
    const { spawnWithPrivateNetwork } = await import(${JSON.stringify(pathToFileURL(join(REPO, "dist/agent/sandbox-net.js")).href)});
    const { child, ready } = spawnWithPrivateNetwork("bwrap", ${JSON.stringify(bwrapArgs)}, { slirp4netns: ${JSON.stringify(slirp)}, seccomp: false }, {});
    child.stderr.pipe(process.stderr);
    await ready;
  `;
  const holder = spawn(process.execPath, ["--input-type=module", "-e", daemon], { stdio: ["ignore", "inherit", "inherit"] });
  try {
    // slirp4netns is started once bubblewrap has said its sandbox's pid: the sandbox is waiting.
    await waitFor(() => existsSync(started), { what: "the stand-in slirp4netns to start (the sandbox waiting for its network)" });
    assert.ok(processesNaming(mark, holder.pid).length > 0, "the sandbox is there, waiting");
    holder.kill("SIGKILL");
    await waitFor(() => processesNaming(mark, holder.pid).length === 0, {
      what: () => `every process of the sandbox to end once its daemon was killed; left: ${processesNaming(mark, holder.pid).join(", ")}`,
    });
  } finally {
    holder.kill("SIGKILL");
    for (const pid of processesNaming(mark, holder.pid)) process.kill(pid, "SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});
