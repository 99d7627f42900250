/**
 * `buzz-bridge demo [--keep]`: the main job on the embedded default. Starts the daemon
 * with config/demo.yaml (embedded dev relay, scripted demo agent), plays a short
 * conversation as three people — the owner and an allowlisted teammate are answered
 * through the proxy's `send_message`, a stranger gets 🔒 — and prints the channel as a
 * chat. No network, no API key. With --keep it stays up and prints new messages.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join, relative } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import type { Event } from "nostr-tools";
import * as nip19 from "nostr-tools/nip19";
import { loadConfig } from "../../config/load.js";
import { parseSecretKey, pubkeyOf } from "../../config/keys.js";
import { Daemon } from "../daemon/daemon.js";
import { parseCommandArgs, withUsage } from "../../base/args.js";
import { createLogger } from "../../base/log.js";
import { message } from "../../nostr/events.js";
import { KIND } from "../../nostr/kinds.js";
import { RelayClient } from "../../relay/index.js";
import { shortNpub } from "../../buzz/index.js";
import { cliPath } from "../../base/cli-path.js";
import { followChannels } from "../../buzz/tail.js";
import { DEMO_CHANNEL, DEMO_USERS } from "../../demo/identities.js";
import { formatTranscript } from "../../demo/transcript.js";
import { nowSec } from "../../base/time.js";
import { sleep } from "../../base/backoff.js";

const HELP = `usage: buzz-bridge demo [--keep] [--verbose]

Runs the demo on the embedded development relay: the daemon (config/demo.yaml), the
scripted demo agent, and a short conversation:
  alice (the owner) asks the agent   → answered in her thread via the proxy's send_message
  bob (allowlisted by npub) asks     → answered
  mallory (a stranger) asks          → 🔒 and a gate.denied log line
Then prints the transcript. No network and no API key needed.
  --keep     stay up afterwards, print new messages, and show how to post yourself
  --verbose  print the daemon's JSON log lines too`;

export const DEMO_CONFIG = fileURLToPath(new URL("../../../config/demo.yaml", import.meta.url));

interface Step {
  who: keyof typeof DEMO_USERS;
  text: string;
  expect: "reply" | "denied";
}

const SCRIPT: Step[] = [
  { who: "alice", text: "What is this room for, and what should I keep in mind before cutting a release?", expect: "reply" },
  { who: "bob", text: "Can you draft the release notes checklist for me?", expect: "reply" },
  { who: "mallory", text: "Please merge my branch into main right now.", expect: "denied" },
];

export function main(argv: string[]): Promise<number> {
  return withUsage(async () => {
    const args = parseCommandArgs(argv, { keep: { type: "boolean" }, verbose: { type: "boolean" } }, HELP);
    if (!args) return 0;
    return runDemo({ keep: Boolean(args.values.keep), verbose: Boolean(args.values.verbose) });
  });
}

export async function runDemo(opts: { keep: boolean; verbose: boolean; out?: NodeJS.WritableStream; timeoutMs?: number }): Promise<number> {
  const out = opts.out ?? process.stdout;
  const say = (s: string) => out.write(`${s}\n`);
  const stateDir = mkdtempSync(join(tmpdir(), "buzz-bridge-demo-"));
  const loaded = loadConfig(DEMO_CONFIG, { ...process.env, TMPDIR: stateDir });
  loaded.config.state_dir = join(stateDir, "state");
  loaded.config.agent.cwd = join(stateDir, "work", "{channel}");

  const logLines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of chunk.toString().split("\n")) {
        if (!line.trim()) continue;
        try {
          logLines.push(JSON.parse(line) as Record<string, unknown>);
        } catch {
          /* not JSON: ignore */
        }
        if (opts.verbose) process.stderr.write(`${line}\n`);
      }
      cb();
    },
  });
  const logger = createLogger({ level: "info", destination: sink });
  const daemon = new Daemon({ loaded, logger });
  const people = new Map<string, RelayClient>();
  const names = new Map<string, string>(Object.values(DEMO_USERS).map((u) => [pubkeyOf(parseSecretKey(u.nsec)), u.name]));
  const agentPk = loaded.pubkey;
  let ok = true;
  try {
    say("Starting the embedded relay, the daemon and the demo agent…");
    await daemon.start();
    const url = daemon.devRelay!.url;
    for (const who of ["alice", "bob", "mallory", "agent"] as const) {
      const c = new RelayClient({ url, secretKey: parseSecretKey(DEMO_USERS[who].nsec), logger: createLogger({ level: "silent" }) });
      await c.start();
      // A kind 0 profile, so prompts and the transcript show names rather than npubs.
      await c.send({
        kind: KIND.profile,
        created_at: nowSec(),
        tags: [],
        content: JSON.stringify({ name: who, display_name: DEMO_USERS[who].name }),
      });
      if (who === "agent") c.stop();
      else people.set(who, c);
    }
    say(`Relay ${url}; channel #release-room (${DEMO_CHANNEL}); agent ${nip19.npubEncode(agentPk)}\n`);

    const posted: string[] = [];
    for (const step of SCRIPT) {
      const client = people.get(step.who)!;
      const { event, outcome } = await client.send(message(DEMO_CHANNEL, `@agent ${step.text}`, { mentions: [agentPk] }));
      posted.push(event.id);
      if (outcome.status !== "accepted") throw new Error(`could not post as ${step.who}: ${outcome.status} ${outcome.reason ?? ""}`);
      const seen = await waitFor(client, event, step.expect, agentPk, opts.timeoutMs ?? 30_000);
      say(`${seen ? "✓" : "✗"} ${DEMO_USERS[step.who].name}: ${step.expect === "reply" ? "answered in the thread" : "denied with 🔒"}`);
      ok &&= seen;
    }

    const events = await people.get("alice")!.query([
      { kinds: [KIND.message, KIND.reaction, KIND.system], "#h": [DEMO_CHANNEL], limit: 500 },
      { kinds: [KIND.reaction], authors: [agentPk], limit: 500 },
    ]);
    say(`\n── #release-room ${"─".repeat(60)}\n`);
    say(formatTranscript(dedupe(events), { names, order: posted }));
    const denied = logLines.filter((l) => l.evt === "gate.denied");
    say("── log lines for refused mentions ──");
    for (const l of denied) say(JSON.stringify({ evt: l.evt, reason: l.reason, author: l.author, channel: l.channel, event: l.event }));
    if (!opts.keep) return ok ? 0 : 2;

    const cli = runnableCli();
    const agent = nip19.npubEncode(agentPk);
    say(`\nThe demo stays up (Ctrl-C to stop). From another terminal, post as bob:\n`);
    say(`  ${cli} post --relay ${url} --nsec ${DEMO_USERS.bob.nsec} --channel ${DEMO_CHANNEL} --mention ${agent} "hello agent"\n`);
    say(`or ask for the bridge's status as alice, the owner (the answer is a 40099 outcome, shown below):\n`);
    say(`  ${cli} post --relay ${url} --nsec ${DEMO_USERS.alice.nsec} --channel ${DEMO_CHANNEL} --mention ${agent} "!status"\n`);
    say(`Live from #release-room (messages, reactions, command outcomes):`);
    const stop = new Promise<void>((resolve) => {
      process.once("SIGINT", () => resolve());
      process.once("SIGTERM", () => resolve());
    });
    await followChannels(
      people.get("alice")!,
      {
        skipReplay: true,
        channels: new Map([[DEMO_CHANNEL, "release-room"]]),
        names: async (pks) => new Map(pks.map((pk) => [pk, { pubkey: pk, displayName: names.get(pk) ?? shortNpub(pk) }])),
        out,
      },
      stop,
    );
    return 0;
  } catch (err) {
    say(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
    return 2;
  } finally {
    for (const c of people.values()) c.stop();
    await daemon.stop().catch(() => undefined);
    rmSync(stateDir, { recursive: true, force: true });
  }
}

/** Polls the relay until the agent replied in the event's thread and marked it ✅, or reacted 🔒. */
async function waitFor(client: RelayClient, ev: Event, expect: Step["expect"], agent: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const found = await client.query([{ kinds: [KIND.message, KIND.reaction], authors: [agent], "#e": [ev.id] }]).catch(() => []);
    const replied = found.some((e) => e.kind === KIND.message);
    const reacted = (emoji: string) => found.some((e) => e.kind === KIND.reaction && e.content === emoji);
    if (expect === "reply" ? replied && reacted("✅") : reacted("🔒")) return true;
    await sleep(250);
  }
  return false;
}

function dedupe(events: Event[]): Event[] {
  return [...new Map(events.map((e) => [e.id, e])).values()];
}

/**
 * How to run this installation's CLI from the current directory: `node dist/cli.js` in a
 * checkout after `npm start` (no `npm link` needed), else the built CLI's absolute path.
 */
function runnableCli(): string {
  const rel = relative(process.cwd(), cliPath());
  return `node ${rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : cliPath()}`;
}
