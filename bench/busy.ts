/**
 * Busy channel and memory, the daemon as users run it: the dev
 * relay and `buzz-bridge run` each in their own process (build first), the bridge a
 * member of 500 channels, `require_mention: false`, owner-only. Then 20,000 events from
 * 10 authors the policy denies, published as fast as the relay takes them (pre-signed
 * with the wasm signer). Measured:
 *  - gate decisions/s (the daemon's `gate.denied` lines) vs events/s delivered to a plain
 *    nostr-tools subscriber process on the same channels (the relay's pace), same run;
 *  - daemon CPU seconds vs the plain subscriber's, over the same events;
 *  - signature checks the daemon made (its `/metrics` `signature_checks_total`): the gate
 *    verifies only what it acts on, so ~0 for 20,000 denied events; the subscriber verifies all;
 *  - daemon RSS idle with 500 channels and after the 20,000 events, vs the subscriber's.
 *
 * Mode `participation` (figure 6p): the same burst with the default policy instead
 * (`require_mention: true`, `participation: thread`): the subscription then has no `#p`,
 * and every event is a reply, without a mention, in a thread the owner opened with the agent
 * — a conversation candidate whose author the gate looks up (a profile, cached) and the
 * policy then refuses (`participation-not-owner`, logged at info). Signature checks must
 * stay at what the bridge acts on (the owner's mention), the decisions at the relay's pace.
 * Run alone: `node --import tsx bench/busy.ts [participation]`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { generateSecretKey, getPublicKey, nip19, type Event } from "nostr-tools";
import { finalizeEvent } from "nostr-tools/wasm";
import { stringify } from "yaml";
import { initCrypto } from "../src/nostr/verify.js";
import { RawClient } from "../kit/raw-client.js";
import { sleep } from "../kit/wait.js";
import { runIfMain } from "./standalone.js";
import { freePort } from "../kit/net.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI = join(ROOT, "dist", "cli.js");
const CHANNELS = 500;
export const AUTHORS = 10;
const EVENTS = Number(process.env.BENCH_BUSY_EVENTS ?? 20_000);
const IN_FLIGHT = 50;
const GC_HOOK = "data:text/javascript,process.on('SIGUSR2',()=>globalThis.gc())";

const now = () => performance.timeOrigin + performance.now();
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

export function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? round(Number(m[1]) / 1024) : NaN;
}

/** Resident memory of a process by where it is mapped from (/proc/PID/smaps), in MiB. */
export function rssByMapping(pid: number): { node_binary: number; other_files: number; anonymous: number } {
  const exe = readlinkSync(`/proc/${pid}/exe`);
  let kb = { node_binary: 0, other_files: 0, anonymous: 0 };
  let bucket: keyof typeof kb = "anonymous";
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const path = head[1]!;
      bucket = path === exe ? "node_binary" : path.startsWith("/") ? "other_files" : "anonymous";
    } else if (line.startsWith("Rss:")) kb = { ...kb, [bucket]: kb[bucket] + Number(line.split(/\s+/)[1]) };
  }
  return { node_binary: round(kb.node_binary / 1024), other_files: round(kb.other_files / 1024), anonymous: round(kb.anonymous / 1024) };
}

/** utime + stime of a process in seconds (clock ticks are 100/s on Linux). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** Lines of a child's stdout, each handed to `on` with its arrival time. */
function lines(child: ChildProcess, on: (line: string, at: number) => void): void {
  createInterface({ input: child.stdout! }).on("line", (l) => on(l, now()));
}

/**
 * Resolves when the callback handed to `arm` is called, or fails after `ms`. Event-driven
 * rather than kit/wait.ts's polling: the bench times these moments, and a polling
 * interval would be counted in them.
 */
function whenCalled<T>(what: string, ms: number, arm: (resolve: (v: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`busy bench: timed out after ${ms} ms waiting for ${what}`)), ms);
    arm((v) => {
      clearTimeout(t);
      resolve(v);
    });
  });
}

async function signatureChecks(metricsUrl: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  let n = 0;
  for (const m of text.matchAll(/^buzz_bridge_signature_checks_total\{[^}]*\} (\d+)/gm)) n += Number(m[1]);
  return n;
}

/** Asks the daemon for a full GC (its SIGUSR2 hook) and lets it settle. */
async function collect(pid: number): Promise<void> {
  process.kill(pid, "SIGUSR2");
  await sleep(1000);
}

/**
 * The V8 heap's committed size by space (its `/metrics`), in MiB: new (the young generation),
 * old, code, trusted (bytecode and other data V8 keeps apart from the JS objects), large
 * objects, and all spaces but new together.
 */
async function heapSpacesMiB(metricsUrl: string): Promise<{
  new_space: number;
  old_space: number;
  code_space: number;
  trusted_space: number;
  large_object: number;
  other_spaces: number;
}> {
  const text = await (await fetch(metricsUrl)).text();
  const by: Record<string, number> = {};
  for (const m of text.matchAll(/^nodejs_heap_space_size_total_bytes\{space="(\w+)"\} (\S+)/gm)) by[m[1]!] = Number(m[2]);
  const mib = (...spaces: string[]) => round(spaces.reduce((n, s) => n + (by[s] ?? 0), 0) / 1048576);
  const rest = Object.keys(by).filter((s) => s !== "new");
  return {
    new_space: mib("new"),
    old_space: mib("old"),
    code_space: mib("code", "code_large_object"),
    trusted_space: mib("trusted", "trusted_large_object", "shared_trusted", "shared_trusted_large_object"),
    large_object: mib("large_object", "new_large_object", "shared_large_object"),
    other_spaces: mib(...rest),
  };
}

/** The daemon's V8 heap in use (its `/metrics`), to tell a leak from RSS headroom. */
async function heapUsedMiB(metricsUrl: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const m = /^nodejs_heap_size_used_bytes (\d+(?:\.\d+)?(?:e\+\d+)?)/m.exec(text);
  return m ? round(Number(m[1]) / 1048576) : NaN;
}

export interface BusyResult {
  events: number;
  relay_delivered_per_s: number;
  gate_decisions_per_s: number;
  decisions_vs_relay_pace: number;
  daemon_cpu_s: number;
  subscriber_cpu_s: number;
  daemon_cpu_vs_subscriber: number;
  daemon_signature_checks: number;
  subscriber_signature_checks: number;
  daemon_rss_idle_500_channels_mib: number;
  daemon_rss_after_events_mib: number;
  daemon_rss_growth_mib: number;
  daemon_rss_idle_after_gc_mib: number;
  daemon_rss_after_events_after_gc_mib: number;
  daemon_heap_used_idle_mib: number;
  /** The idle RSS (as is) split: pages of the node executable, of other files (libc, libstdc++), anonymous memory. */
  daemon_rss_idle_node_binary_mib: number;
  daemon_rss_idle_other_files_mib: number;
  daemon_rss_idle_anonymous_mib: number;
  /** Of the anonymous memory: V8's young generation and its other spaces (committed), and the rest (native: malloc). */
  daemon_v8_new_space_idle_mib: number;
  daemon_v8_other_spaces_idle_mib: number;
  /** The other spaces, the main ones on their own: old, code, trusted, large objects. */
  daemon_v8_old_space_idle_mib: number;
  daemon_v8_code_space_idle_mib: number;
  daemon_v8_trusted_space_idle_mib: number;
  daemon_v8_large_object_idle_mib: number;
  daemon_rss_idle_native_mib: number;
  daemon_heap_used_after_mib: number;
  subscriber_rss_idle_mib: number;
  subscriber_rss_after_mib: number;
}

export async function benchBusy(mode: "denied" | "participation" = "denied"): Promise<BusyResult> {
  await initCrypto();
  const dir = mkdtempSync(join(tmpdir(), "bench-busy-"));
  const children: ChildProcess[] = [];
  const clients: RawClient[] = [];
  try {
    const bridgeSk = generateSecretKey();
    const ownerSk = generateSecretKey();
    const subSk = generateSecretKey();
    const authors = Array.from({ length: AUTHORS }, () => generateSecretKey());
    const members = [bridgeSk, ownerSk, subSk, ...authors].map((k) => getPublicKey(k));
    const channels = Array.from({ length: CHANNELS }, () => randomUUID());
    const seed = join(dir, "seed.yaml");
    writeFileSync(
      seed,
      stringify(
        { channels: channels.map((id, i) => ({ id, name: `bench-${i}`, about: `bench channel ${i}`, members })) },
        { aliasDuplicateObjects: false },
      ),
    );

    // Pre-signed up front: signing is slower than everything measured here.
    // A little ahead of now, so the subscriptions opened later (`since` = their start) still match.
    const created = Math.floor(Date.now() / 1000) + 120;
    const busyChannel = channels[0]!;
    // Participation: the owner's mention opens the thread the chatter then replies in.
    const opening = finalizeEvent(
      {
        kind: 9,
        created_at: created - 60,
        tags: [
          ["h", busyChannel],
          ["p", getPublicKey(bridgeSk)],
        ],
        content: "@bot let's talk about the build",
      },
      ownerSk,
    ) as Event;
    const threadTags = mode === "participation" ? [["e", opening.id, "", "reply"]] : [];
    const perAuthor = authors.map((sk, a) =>
      Array.from({ length: Math.floor(EVENTS / AUTHORS) + (a < EVENTS % AUTHORS ? 1 : 0) }, (_, i) =>
        JSON.stringify([
          "EVENT",
          finalizeEvent(
            {
              kind: 9,
              created_at: created,
              tags: [["h", busyChannel], ...threadTags],
              content: `chatter ${a}-${i} about the build, not for the bot`,
            },
            sk,
          ) as Event,
        ]),
      ),
    );
    const total = perAuthor.reduce((n, f) => n + f.length, 0);

    const relay = spawn(process.execPath, [CLI, "dev-relay", "--port", "0", "--seed", seed, "--no-limits"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    children.push(relay);
    const url = String((await createInterface({ input: relay.stdout! })[Symbol.asyncIterator]().next()).value);
    if (!url.startsWith("ws://")) throw new Error(`busy bench: the dev relay did not start (first line: ${url})`);

    const port = await freePort();
    const config = join(dir, "bridge.yaml");
    writeFileSync(
      config,
      stringify({
        identity: { secret_key: nip19.nsecEncode(bridgeSk), owner: nip19.npubEncode(getPublicKey(ownerSk)) },
        relay: { url },
        agent: { command: "buzz-bridge", args: ["demo-agent"], cwd: join(dir, "work", "{channel}") },
        defaults: mode === "participation" ? { respond_to: "owner-only" } : { respond_to: "owner-only", require_mention: false },
        state_dir: join(dir, "state"),
        http: { listen: `127.0.0.1:${port}` },
        log: { level: "info" },
      }),
    );
    // --expose-gc plus a SIGUSR2 hook, so memory can also be read after a full GC (garbage vs retained).
    const daemon = spawn(
      process.execPath,
      [
        ...(process.env.BENCH_DAEMON_NODE_FLAGS?.split(" ").filter(Boolean) ?? []),
        "--expose-gc",
        "--import",
        GC_HOOK,
        CLI,
        "run",
        "-c",
        config,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    children.push(daemon);
    let decisions = 0;
    let lastDecisionAt = 0;
    let onStarted: (() => void) | undefined;
    let onDecided: (() => void) | undefined;
    let onTurnEnd: (() => void) | undefined;
    lines(daemon, (l, at) => {
      if (l.includes('"evt":"turn.end"')) onTurnEnd?.();
      else if (l.includes('"evt":"gate.denied"')) {
        lastDecisionAt = at;
        if (++decisions === total) onDecided?.();
      } else if (l.includes('"evt":"daemon.started"')) onStarted?.();
    });
    await whenCalled<void>("daemon.started", 60_000, (r) => (onStarted = r));

    const sub = spawn(process.execPath, [join(ROOT, "bench", "plain-subscriber.mjs")], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "inherit"],
      env: {
        ...process.env,
        BENCH_URL: url,
        BENCH_SK: Buffer.from(subSk).toString("hex"),
        BENCH_CHANNELS: JSON.stringify(channels),
        // Participation: the owner's mention and the agent's answer come first.
        BENCH_EXPECT: String(total + (mode === "participation" ? 2 : 0)),
      },
    });
    children.push(sub);
    let onReady: (() => void) | undefined;
    let onAll: ((r: { received: number; lastAt: number }) => void) | undefined;
    lines(sub, (l) => {
      if (l === "ready") onReady?.();
      else if (l.startsWith("{")) onAll?.(JSON.parse(l) as { received: number; lastAt: number });
    });
    await whenCalled<void>("the plain subscriber's EOSE", 30_000, (r) => (onReady = r));

    // Idle: the daemon settled with 500 channels subscribed. No agent runs yet (sandboxed, the warm
    // spare waits for the channel it will serve); an agent would be a process of its own.
    await sleep(3000);
    const daemonIdle = rssMiB(daemon.pid!);
    // Where it goes: mapped files vs anonymous memory, and how much of the latter V8's heap spaces hold.
    const idleMap = rssByMapping(daemon.pid!);
    const idleSpaces = await heapSpacesMiB(`http://127.0.0.1:${port}/metrics`);
    await collect(daemon.pid!);
    const daemonIdleGc = rssMiB(daemon.pid!);
    const subIdle = rssMiB(sub.pid!);
    const metricsUrl = `http://127.0.0.1:${port}/metrics`;
    if (mode === "participation") {
      // The thread becomes the agent's: the owner's mention, answered, before anything is measured.
      const owner = await RawClient.authed(url, ownerSk);
      clients.push(owner);
      const answered = whenCalled<void>("the owner's mention answered", 60_000, (r) => (onTurnEnd = r));
      owner.ws.send(JSON.stringify(["EVENT", opening]));
      await answered;
    }
    const checks0 = await signatureChecks(metricsUrl);
    const heapIdle = await heapUsedMiB(metricsUrl);
    const dCpu0 = cpuSeconds(daemon.pid!);
    const sCpu0 = cpuSeconds(sub.pid!);

    const chatters: RawClient[] = [];
    for (const sk of authors) chatters.push(await RawClient.authed(url, sk));
    clients.push(...chatters);
    const decided = whenCalled<void>(`${total} gate decisions`, 240_000, (r) => (onDecided = r));
    const delivered = whenCalled<{ received: number; lastAt: number }>(
      `${total} events at the plain subscriber`,
      240_000,
      (r) => (onAll = r),
    );
    const t0 = now();
    let refused = 0;
    await Promise.all(
      chatters.map(
        (c, a) =>
          new Promise<void>((resolve) => {
            const frames = perAuthor[a]!;
            let sent = 0;
            let acked = 0;
            c.ws.on("message", (d) => {
              const s = d.toString();
              if (!s.startsWith('["OK"')) return;
              if (!s.includes(",true,")) refused++;
              if (++acked === frames.length) return resolve();
              if (sent < frames.length) c.ws.send(frames[sent++]!);
            });
            while (sent < Math.min(IN_FLIGHT, frames.length)) c.ws.send(frames[sent++]!);
          }),
      ),
    );
    if (refused) throw new Error(`busy bench: the relay refused ${refused} events`);
    const subExit = new Promise<never>((_, reject) =>
      sub.once("exit", (code) => reject(new Error(`busy bench: the plain subscriber exited (code ${code})`))),
    );
    const [plain] = await Promise.race([Promise.all([delivered, decided]), subExit]);
    const relaySec = (plain.lastAt - t0) / 1000;
    const gateSec = (lastDecisionAt - t0) / 1000;
    const dCpu = cpuSeconds(daemon.pid!) - dCpu0;
    const sCpu = cpuSeconds(sub.pid!) - sCpu0;
    const checks = (await signatureChecks(metricsUrl)) - checks0;
    await sleep(2000); // the burst's garbage is collected before RSS is read
    const daemonAfter = rssMiB(daemon.pid!);
    const subAfter = rssMiB(sub.pid!);
    await collect(daemon.pid!);
    const daemonAfterGc = rssMiB(daemon.pid!);
    const heapAfter = await heapUsedMiB(metricsUrl);

    return {
      events: total,
      relay_delivered_per_s: Math.round(total / relaySec),
      gate_decisions_per_s: Math.round(total / gateSec),
      decisions_vs_relay_pace: round(relaySec / gateSec, 3),
      daemon_cpu_s: round(dCpu, 2),
      subscriber_cpu_s: round(sCpu, 2),
      daemon_cpu_vs_subscriber: round(dCpu / sCpu, 3),
      daemon_signature_checks: checks,
      subscriber_signature_checks: total,
      daemon_rss_idle_500_channels_mib: daemonIdle,
      daemon_rss_after_events_mib: daemonAfter,
      daemon_rss_growth_mib: round(daemonAfter - daemonIdle),
      daemon_rss_idle_after_gc_mib: daemonIdleGc,
      daemon_rss_after_events_after_gc_mib: daemonAfterGc,
      daemon_heap_used_idle_mib: heapIdle,
      daemon_rss_idle_node_binary_mib: idleMap.node_binary,
      daemon_rss_idle_other_files_mib: idleMap.other_files,
      daemon_rss_idle_anonymous_mib: idleMap.anonymous,
      daemon_v8_new_space_idle_mib: idleSpaces.new_space,
      daemon_v8_other_spaces_idle_mib: idleSpaces.other_spaces,
      daemon_v8_old_space_idle_mib: idleSpaces.old_space,
      daemon_v8_code_space_idle_mib: idleSpaces.code_space,
      daemon_v8_trusted_space_idle_mib: idleSpaces.trusted_space,
      daemon_v8_large_object_idle_mib: idleSpaces.large_object,
      daemon_rss_idle_native_mib: round(idleMap.anonymous - idleSpaces.new_space - idleSpaces.other_spaces),
      daemon_heap_used_after_mib: heapAfter,
      subscriber_rss_idle_mib: subIdle,
      subscriber_rss_after_mib: subAfter,
    };
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
    for (const c of children.reverse()) c.kill("SIGTERM");
    await sleep(500); // the children exit before their directory is removed
    rmSync(dir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, () => benchBusy(process.argv[2] === "participation" ? "participation" : "denied"));
