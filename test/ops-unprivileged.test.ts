/**
 * The daemon as the shipped recipes run it: as an unprivileged user, with the config in a
 * read-only directory, state where the recipe provides it, and the key handed over the way
 * the recipe documents. Each run follows its recipe's own text — the systemd unit's
 * User=, Environment=, WorkingDirectory=, StateDirectory=, LoadCredential= and ExecStart=;
 * the Dockerfile's USER, ENV, WORKDIR, ENTRYPOINT and CMD — with the absolute paths mapped
 * into a temp dir, and must end with a mention answered and nothing written beside the
 * config.
 *
 * As root (CI) the daemon runs under the recipe's uid (nobody for the unit's dedicated user,
 * 10001 for the image); otherwise under this user, the config directory made read-only.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nip19 } from "nostr-tools";
import { parseDocument } from "yaml";
import { dockerEnv, parseDockerfile, parseUnit } from "./fixtures/recipes.js";
import { CLI, REPO, World } from "../kit/world.js";
import { cliFor } from "./fixtures/run-as.js";
import { message } from "../src/nostr/events.js";
import { KIND } from "../src/nostr/kinds.js";
import { waitFor } from "../kit/wait.js";

const isRoot = process.getuid?.() === 0;
const NOBODY = 65534;

let w: World;
let tmp: string;
before(async () => {
  w = await World.create();
  tmp = mkdtempSync(join(tmpdir(), "bb-unpriv-"));
  chmodSync(tmp, 0o755); // the service user must reach its directories inside
});
after(async () => {
  await w.close();
  rmSync(tmp, { recursive: true, force: true });
});

/** config/example.yaml with only relay, identity and agent edited, as docs/operating.md says. */
function editedExample(identity: Record<string, string>): string {
  const doc = parseDocument(readFileSync(join(REPO, "config", "example.yaml"), "utf8"));
  doc.setIn(["relay", "url"], w.relay.url);
  doc.setIn(["relay", "presence"], false);
  doc.setIn(["identity"], doc.createNode({ ...identity, owner: w.owner.npub }));
  doc.setIn(["agent", "command"], "buzz-bridge");
  doc.setIn(["agent", "args"], doc.createNode(["demo-agent"]));
  return doc.toString();
}

/** A fresh agent key via `keygen`, let into the relay and a channel of its own with the owner. */
async function newAgent(out: string, owner?: string): Promise<{ channel: string; pk: string }> {
  const args = [CLI, "keygen", "--out", out, ...(owner ? ["--owner", owner] : [])];
  const printed = execFileSync(process.execPath, args, { encoding: "utf8" });
  const npub = /npub: (npub1\w+)/.exec(printed)![1]!;
  const pk = nip19.decode(npub).data as string;
  w.relay.addRelayMember(pk);
  const channel = await w.relay.createChannel({ name: `room-${pk.slice(0, 6)}`, type: "stream", members: [pk, w.owner.pk] });
  return { channel, pk };
}

interface Started {
  logs: Record<string, unknown>[];
  raw: () => string;
  exited: Promise<number | null>;
  stop: () => Promise<number | null>;
  waitLog: (evt: string) => Promise<Record<string, unknown>>;
}

function startAs(cmd: string, args: string[], o: { env: NodeJS.ProcessEnv; cwd: string; uid?: number; gid?: number }): Started {
  const proc = spawn(cmd, args, { env: o.env, cwd: o.cwd, uid: o.uid, gid: o.gid, stdio: ["ignore", "pipe", "pipe"] });
  const logs: Record<string, unknown>[] = [];
  let raw = "";
  proc.stdout.on("data", (d: Buffer) => {
    raw += d.toString();
    for (const line of d.toString().split("\n")) {
      try {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        /* partial or not JSON; the evt waits below re-scan raw */
      }
    }
  });
  proc.stderr.on("data", (d: Buffer) => (raw += d.toString()));
  const exited = new Promise<number | null>((r) => proc.on("exit", (code) => r(code)));
  const parsed = () =>
    raw.split("\n").flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  return {
    logs,
    raw: () => raw,
    exited,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 15_000);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
    waitLog: async (evt) => {
      let done = false;
      void exited.then(() => (done = true));
      const probe = () => {
        const found = parsed().find((l) => l.evt === evt);
        if (!found && done) throw new Error(`exited without ${evt}; output:\n${raw.slice(-3000)}`);
        return found;
      };
      return waitFor(probe, { timeoutMs: 90_000, intervalMs: 100, what: () => `${evt}; output:\n${raw.slice(-3000)}` });
    },
  };
}

/** Everything under `dir`, for "nothing was written beside the config". */
const listing = (dir: string) => readdirSync(dir, { recursive: true }).map(String).sort();

async function mentionAnswered(agent: { channel: string; pk: string }): Promise<void> {
  const client = await w.owner.relay();
  const { event, outcome } = await client.send(message(agent.channel, "@agent hello from the recipe", { mentions: [agent.pk] }));
  assert.equal(outcome.status, "accepted");
  const replies = await w.waitEvents({ kinds: [KIND.message], authors: [agent.pk], "#e": [event.id] }, (e) => e.length >= 1, 90_000);
  assert.equal(replies.length, 1, "one reply in the mention's thread");
}

test("the systemd unit's recipe: its user, a read-only /etc/buzz-bridge, the key through LoadCredential=, state in StateDirectory=", async () => {
  const service = parseUnit(readFileSync(join(REPO, "config", "buzz-bridge.service"), "utf8")).get("Service")!;
  const one = (k: string) => {
    const v = service.get(k);
    assert.ok(v, `the unit sets ${k}`);
    return v.at(-1)!;
  };
  const root = join(tmp, "systemd");
  // The unit's absolute paths, word by word: env stays (it finds this Node first on PATH), the install becomes this checkout's, the rest moves under root.
  const uid = isRoot ? NOBODY : process.getuid!();
  const gid = isRoot ? NOBODY : process.getgid!();
  const cli = cliFor(isRoot ? { uid, gid } : undefined, tmp);
  const mapWord = (p: string) =>
    p === "/usr/bin/env" ? p : p === "/opt/buzz-bridge/dist/cli.js" ? cli : p.startsWith("/") ? `${root}${p}` : p;
  const map = (p: string) => p.split(" ").map(mapWord).join(" ");

  // As root, per the unit's install comment: the config dir and key root-owned, the config group-readable.
  const etc = map(`/etc/${one("ConfigurationDirectory")}`);
  mkdirSync(etc, { recursive: true, mode: 0o755 });
  const [credName, credSource] = one("LoadCredential").split(":") as [string, string];
  const agent = await newAgent(map(credSource));
  const config = join(etc, "buzz-bridge.yaml");
  writeFileSync(config, editedExample({ secret_key_file: "${CREDENTIALS_DIRECTORY:-/etc/buzz-bridge}/agent.nsec" }));
  if (isRoot) chownSync(config, 0, gid);
  chmodSync(config, 0o640);
  chmodSync(etc, 0o555); // ProtectSystem=strict: /etc is read-only to the service
  const etcBefore = listing(etc);

  // What systemd prepares before ExecStart: the state directory and the credential.
  const state = map(`/var/lib/${one("StateDirectory")}`);
  mkdirSync(join(state, ".."), { recursive: true, mode: 0o755 });
  mkdirSync(state, { mode: Number.parseInt(one("StateDirectoryMode"), 8) });
  const creds = join(root, "run", "credentials");
  mkdirSync(join(root, "run"), { recursive: true, mode: 0o755 });
  mkdirSync(creds, { mode: 0o500 });
  copyFileSync(map(credSource), join(creds, credName));
  chmodSync(join(creds, credName), 0o400);
  if (isRoot) for (const p of [state, creds, join(creds, credName)]) chownSync(p, uid, gid);

  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, STATE_DIRECTORY: state, CREDENTIALS_DIRECTORY: creds };
  for (const e of service.get("Environment") ?? []) {
    const [k, ...v] = e.split("=");
    env[k!] = map(v.join("="));
  }
  assert.equal(env.BUZZ_BRIDGE_CONFIG, config);
  const [cmd, ...args] = map(one("ExecStart")).split(" ");
  const d = startAs(cmd!, args, { env, cwd: map(one("WorkingDirectory")), uid: isRoot ? uid : undefined, gid: isRoot ? gid : undefined });
  try {
    await d.waitLog("daemon.started");
    await mentionAnswered(agent);
  } finally {
    assert.equal(await d.stop(), 0, d.raw().slice(-3000));
  }
  assert.equal(statSync(join(state, "queue.db")).uid, uid, "the queue lives in StateDirectory=, written by the unit's user");
  assert.ok(existsSync(join(state, "work")), "agent work dirs default to inside it");
  assert.deepEqual(listing(etc), etcBefore, "nothing written beside the config");
});

test("the Dockerfile's recipe: USER 10001, the config mounted read-only, the key a file keygen gave to that uid, state in the volume", async () => {
  const stages = parseDockerfile(readFileSync(join(REPO, "Dockerfile"), "utf8"));
  const run = stages.at(-1)!;
  const one = (op: string) => {
    const found = run.filter((i) => i.op === op);
    assert.ok(found.length >= 1, `the run stage has ${op}`);
    return found.at(-1)!.args;
  };
  const root = join(tmp, "docker");
  const [uid, gid] = one("USER").split(":").map(Number) as [number, number];
  const cli = cliFor(isRoot ? { uid, gid } : undefined, tmp);
  const map = (p: string) => (p === "/app/dist/cli.js" ? cli : p.replace(/^\//, `${root}/`));
  const runUid = isRoot ? uid : process.getuid!();
  const runGid = isRoot ? gid : process.getgid!();

  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH };
  for (const [k, v] of Object.entries(dockerEnv(run))) env[k] = v.startsWith("/") ? map(v) : v;
  const config = env.BUZZ_BRIDGE_CONFIG!;
  const etc = join(config, "..");
  mkdirSync(etc, { recursive: true, mode: 0o755 });
  // On the host: keygen hands the key to the container's uid; the mount is read-only.
  const agent = await newAgent(join(etc, "agent.nsec"), isRoot ? `${uid}:${gid}` : undefined);
  writeFileSync(config, editedExample({ secret_key_file: "agent.nsec" }));
  chmodSync(config, 0o644);
  chmodSync(etc, 0o555);
  const etcBefore = listing(etc);

  // The volume, as the image's `install -d -o buzz-bridge` leaves it.
  const volume = map(one("VOLUME"));
  mkdirSync(join(volume, ".."), { recursive: true, mode: 0o755 });
  mkdirSync(volume, { mode: 0o750 });
  if (isRoot) chownSync(volume, runUid, runGid);
  assert.equal(env.STATE_DIRECTORY, volume, "the image names its volume as the state directory");

  const [node, script, ...rest] = [...(JSON.parse(one("ENTRYPOINT")) as string[]), ...(JSON.parse(one("CMD")) as string[])];
  assert.equal(node, "node");
  const d = startAs(process.execPath, [map(script!), ...rest], {
    env,
    cwd: map(one("WORKDIR")),
    uid: isRoot ? runUid : undefined,
    gid: isRoot ? runGid : undefined,
  });
  try {
    await d.waitLog("daemon.started");
    await mentionAnswered(agent);
  } finally {
    assert.equal(await d.stop(), 0, d.raw().slice(-3000));
  }
  assert.equal(statSync(join(volume, "queue.db")).uid, runUid, "the queue lives in the volume, written by the image's user");
  assert.deepEqual(listing(etc), etcBefore, "nothing written into the read-only mount");
});
