/** `buzz-bridge dev-relay` as a subprocess: URL first on stdout, seeded channels, admin API, clean stop. */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { generateSecretKey, getPublicKey, type Event } from "nostr-tools";
import { RawClient } from "../kit/raw-client.js";

const cli = fileURLToPath(new URL("../dist/cli.js", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "devrelay-cmd-"));
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

function start(args: string[]): { child: ChildProcess; lines: AsyncIterator<string> } {
  const child = spawn(process.execPath, [cli, "dev-relay", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  return { child, lines: createInterface({ input: child.stdout! })[Symbol.asyncIterator]() };
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", (code) => resolve(code)),
  );

describe("buzz-bridge dev-relay", () => {
  it("prints the URL first, then the admin token and channels; serves; stops on SIGTERM", async () => {
    const alice = generateSecretKey();
    const bob = generateSecretKey();
    const seed = join(dir, "seed.yaml");
    writeFileSync(seed, `channels:\n  - name: general\n    members: [${getPublicKey(alice)}]\n`);
    const { child, lines } = start(["--port", "0", "--seed", seed]);
    const url = (await lines.next()).value as string;
    assert.match(url, /^ws:\/\/127\.0\.0\.1:\d+$/);
    const token = ((await lines.next()).value as string).split(" ");
    assert.equal(token[0], "admin-token");
    const channel = ((await lines.next()).value as string).split(" ");
    assert.equal(channel[0], "channel");
    assert.equal(channel[2], "general");

    const c = await RawClient.authed(url, alice);
    await c.req("m", { kinds: [44100], "#p": [getPublicKey(alice)] });
    const admin = async (op: string, body: object) => {
      const res = await fetch(`${url.replace("ws://", "http://")}/admin/${op}`, {
        method: "POST",
        body: JSON.stringify(body),
        headers: { authorization: `Bearer ${token[1]}` },
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const made = await admin("create-channel", { name: "side", members: [getPublicKey(alice)] });
    assert.equal(made.status, 200);
    const note = (
      await c.next((f) => f[0] === "EVENT" && f[1] === "m" && (f[2] as Event).tags.some((t) => t[0] === "h" && t[1] === made.body.id))
    )[2] as Event;
    assert.equal(note.kind, 44100);
    assert.equal((await admin("add-relay-member", { pubkey: getPublicKey(bob) })).status, 200);
    await (await RawClient.authed(url, bob)).close();
    const denied = await fetch(`${url.replace("ws://", "http://")}/admin/stats`, { method: "POST" });
    assert.equal(denied.status, 401);
    await c.close();

    child.kill("SIGTERM");
    assert.equal(await exited(child), 0);
  });

  it("refuses a bad seed naming the file, exit 1", async () => {
    const seed = join(dir, "bad.yaml");
    writeFileSync(seed, "channels:\n  - about: nameless\n");
    const { child } = start(["--port", "0", "--seed", seed]);
    let err = "";
    child.stderr!.on("data", (d) => (err += String(d)));
    assert.equal(await exited(child), 1);
    assert.ok(err.includes(seed), err);
    assert.match(err, /channels\.0\.name/);
  });
});
