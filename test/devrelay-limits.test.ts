/**
 * The dev relay enforces Buzz's limits by default, with Buzz's reply texts, and each limit can
 * be changed from the seed file and the command line (docs/dev-relay.md, "Limits").
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { generateSecretKey, getPublicKey } from "nostr-tools";
import { startDevRelay, type DevRelay } from "../src/devrelay/index.js";
import { nip98Post, RawClient, sign } from "../kit/raw-client.js";

const cli = fileURLToPath(new URL("../dist/cli.js", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "devrelay-limits-"));
const relays: DevRelay[] = [];
const clients: RawClient[] = [];
const children: ChildProcess[] = [];
after(async () => {
  for (const c of clients) await c.close();
  for (const r of relays) await r.close();
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

const RATE_LIMITED = /^rate-limited: quota exceeded; retry in \d+s$/;

async function reqs(c: RawClient, n: number, tag: string): Promise<(string | undefined)[]> {
  const out: (string | undefined)[] = [];
  for (let i = 0; i < n; i++) out.push((await c.req(`${tag}${i}`, { kinds: [1], limit: 1 })).closed);
  return out;
}

describe("dev relay limits", () => {
  it("refuses the 51st frame within 5 s by default, with Buzz's CLOSED text", async () => {
    const relay = await startDevRelay();
    relays.push(relay);
    const alice = generateSecretKey();
    relay.addRelayMember(getPublicKey(alice));
    const c = await RawClient.authed(relay.url, alice);
    clients.push(c);
    const closed = await reqs(c, 51, "q");
    assert.deepEqual(closed.slice(0, 50), Array(50).fill(undefined), "50 frames are admitted");
    assert.match(closed[50] ?? "", RATE_LIMITED);
  });

  it("takes limits from the seed: HTTP quota, subscriptions per connection, stored events per filter, content size", async () => {
    const alice = generateSecretKey();
    const seed = join(dir, "seed.yaml");
    writeFileSync(
      seed,
      [
        `members: [${getPublicKey(alice)}]`,
        "limits:",
        "  http_quota: { frames: 2, window: 1m }",
        "  max_subscriptions: 2",
        "  max_stored_per_filter: 3",
        "  max_content_bytes: 10",
        "",
      ].join("\n"),
    );
    const relay = await startDevRelay({ seed });
    relays.push(relay);
    assert.equal((await nip98Post(relay.httpUrl, "/query", [{ kinds: [1] }], alice)).status, 200);
    assert.equal((await nip98Post(relay.httpUrl, "/query", [{ kinds: [1] }], alice)).status, 200);
    const third = await nip98Post(relay.httpUrl, "/query", [{ kinds: [1] }], alice);
    assert.equal(third.status, 429);
    assert.match(third.body.error, RATE_LIMITED);

    const c = await RawClient.authed(relay.url, alice);
    clients.push(c);
    for (let i = 0; i < 5; i++) assert.equal((await c.publish(sign({ kind: 1, content: `note ${i}` }, alice)))[2], true);
    const big = await c.publish(sign({ kind: 1, content: "eleven byte" }, alice));
    assert.equal(big[2], false);
    assert.match(String(big[3]), /^invalid: content too large \(11 bytes, max 10\)$/);
    const first = await c.req("a", { kinds: [1] });
    assert.equal(first.events.length, 3, "at most 3 stored events per filter");
    assert.equal((await c.req("b", { kinds: [1] })).closed, undefined);
    assert.match((await c.req("c", { kinds: [1] })).closed ?? "", /^blocked: at most 2 subscriptions per connection$/);
  });

  it("takes limits from the command line, and --no-limits lifts the quotas", async () => {
    const alice = generateSecretKey();
    const seed = join(dir, "cli-seed.yaml");
    writeFileSync(seed, `members: [${getPublicKey(alice)}]\nlimits: { frame_quota: { frames: 100, window: 5s } }\n`);
    const start = async (args: string[]) => {
      const child = spawn(process.execPath, [cli, "dev-relay", "--seed", seed, ...args], { stdio: ["ignore", "pipe", "pipe"] });
      children.push(child);
      const url = (await createInterface({ input: child.stdout! })[Symbol.asyncIterator]().next()).value as string;
      const c = await RawClient.authed(url, alice);
      clients.push(c);
      return c;
    };
    const limited = await start(["--frame-quota", "2/10s"]);
    const closed = await reqs(limited, 3, "l");
    assert.deepEqual(closed.slice(0, 2), [undefined, undefined]);
    assert.match(closed[2] ?? "", RATE_LIMITED, "the command line wins over the seed");

    const free = await start(["--no-limits"]);
    assert.deepEqual(await reqs(free, 120, "f"), Array(120).fill(undefined), "no frame quota");
  });

  it("refuses a malformed limit flag with a message naming it", async () => {
    const child = spawn(process.execPath, [cli, "dev-relay", "--frame-quota", "fifty"], { stdio: ["ignore", "pipe", "pipe"] });
    children.push(child);
    let err = "";
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((r) => child.once("exit", r));
    assert.equal(code, 1);
    assert.match(err, /--frame-quota must be N\/WINDOW such as 50\/5s, or off; got 'fifty'/);
  });
});
