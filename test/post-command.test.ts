/** `buzz-bridge post`: the helper `demo --keep` tells people to use, against a real dev relay. */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { World, CLI } from "../kit/world.js";

let w: World;
before(async () => {
  w = await World.create();
});
after(() => w.close());

/** Async: the dev relay lives in this process and must keep answering while post runs. */
const post = (args: string[]) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [CLI, "post", ...args], { encoding: "utf8", timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ status: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
    );
  });

test("post publishes a kind 9 as the given key, mentioning and threading as asked", async () => {
  const first = await post([
    "--relay",
    w.relay.url,
    "--nsec",
    w.owner.nsec,
    "--channel",
    w.channel,
    "--mention",
    w.agent.npub,
    "hello",
    "agent",
  ]);
  assert.equal(first.status, 0, first.stderr);
  const id = first.stdout.trim();
  assert.match(id, /^[0-9a-f]{64}$/);
  const reply = await post(["--relay", w.relay.url, "--nsec", w.teammate.nsec, "--channel", w.channel, "--reply-to", id, "me too"]);
  assert.equal(reply.status, 0, reply.stderr);
  const [ev] = await w.query({ ids: [id] });
  assert.equal(ev!.content, "hello agent");
  assert.equal(ev!.pubkey, w.owner.pk);
  assert.ok(ev!.tags.some((t) => t[0] === "p" && t[1] === w.agent.pk));
  const [r] = await w.query({ ids: [reply.stdout.trim()] });
  assert.deepEqual(
    r!.tags.find((t) => t[0] === "e"),
    ["e", id, "", "reply"],
  );
});

test("post reports what is wrong: missing arguments (exit 1), a refused message (exit 2)", async () => {
  const missing = await post(["--relay", w.relay.url, "hello"]);
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /--nsec, --channel and TEXT are required/);
  const refused = await post(["--relay", w.relay.url, "--nsec", w.owner.nsec, "--channel", "no-such-channel", "hello"]);
  assert.equal(refused.status, 2);
  assert.match(refused.stderr, /refused the message: refused \(restricted/);
});

test("post by a key the relay does not admit names the relay's reason and the npub to add, not 'disconnected'", async () => {
  const { generateSecretKey, nip19 } = await import("nostr-tools");
  const outsider = generateSecretKey();
  const r = await post(["--relay", w.relay.url, "--nsec", nip19.nsecEncode(outsider), "--channel", w.channel, "hello"]);
  assert.equal(r.status, 2, r.stderr);
  const npub = nip19.npubEncode((await import("nostr-tools")).getPublicKey(outsider));
  assert.equal(r.stderr.trim(), `post: restricted: not a relay member: ask the relay admin to add ${npub} as a relay member`);
  assert.doesNotMatch(r.stderr, /disconnected/);
});
