/**
 * Shared pieces of the stop-gate tests (test/gates-*.test.ts): MCP server entries for the
 * two gate fixtures, and readers over the daemon's log lines. The gate servers are real
 * MCP servers behind the real proxy; the approval gate talks to the real dev relay with
 * its own key, as buzz-hooks' approval-gate does through the `buzz` CLI.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { generateSecretKey, getPublicKey, nip19 } from "nostr-tools";
import type { Event } from "nostr-tools";
import type { DaemonProc, Person, World } from "./fixtures/world.js";
import { reaction } from "../src/relay/events.js";

export const GATE_SERVER = join(import.meta.dirname, "fixtures", "gate-server.mjs");
export const APPROVAL_GATE = join(import.meta.dirname, "fixtures", "approval-gate.mjs");

export type Line = Record<string, unknown>;

/** An `mcp.servers` entry for test/fixtures/gate-server.mjs (see its header for the env). */
export function gateServer(env: Record<string, string>, stop: "reprompt" | "wait" = "reprompt"): Record<string, unknown> {
  return { command: process.execPath, args: [GATE_SERVER], env, stop };
}

/**
 * The approval gate's own identity, made a member of the world's channel(s), and its
 * `mcp.servers` entry (`stop: wait` unless told otherwise). Approvers are hex pubkeys.
 */
export async function approvalGate(
  w: World,
  o: { approvers: string[]; countFile: string; channel?: string; stop?: "reprompt" | "wait"; env?: Record<string, string> },
) {
  const sk = generateSecretKey();
  const pk = getPublicKey(sk);
  const channel = o.channel ?? w.channel;
  await w.relay.addMember(channel, pk);
  const server = {
    command: process.execPath,
    args: [APPROVAL_GATE],
    env: {
      APPROVAL_NSEC: nip19.nsecEncode(sk),
      APPROVAL_RELAY: w.relay.url,
      APPROVAL_CHANNEL: channel,
      APPROVAL_APPROVERS: o.approvers.join(","),
      GATE_COUNT_FILE: o.countFile,
      ...o.env,
    },
    stop: o.stop ?? "wait",
  };
  return { pk, server };
}

/** Log lines from index `from` on. */
export function since(d: DaemonProc, from: number): Line[] {
  return d.logs.slice(from);
}

export function lines(d: DaemonProc, from: number, evt: string, pred: (l: Line) => boolean = () => true): Line[] {
  return since(d, from).filter((l) => l.evt === evt && pred(l));
}

/** `session/prompt` calls the bridge made since `from` (one `agent.turn_end` per prompt). */
export function prompts(d: DaemonProc, from: number): number {
  return lines(d, from, "agent.turn_end").length;
}

/** The `gate.round` lines of one turn, in order. */
export function rounds(d: DaemonProc, from: number, turn?: unknown): Line[] {
  return lines(d, from, "gate.round", (l) => turn === undefined || String(l.turn) === String(turn));
}

/** The count file a gate fixture appends one line per hook call to, as `[hook, verdict]` pairs. */
export function hookCalls(file: string): string[][] {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  return text.split("\n").filter(Boolean).map((l) => l.split(" ").slice(0, 2));
}

/** A reaction in `channel` (Person.react always tags the world's first channel). */
export async function reactIn(p: Person, target: Event, emoji: string, channel: string): Promise<Event> {
  const { event, outcome } = await (await p.relay()).send(reaction(target, emoji, channel));
  if (outcome.status !== "accepted") throw new Error(`${p.name} could not react in ${channel}: ${outcome.status} ${outcome.reason ?? ""}`);
  return event;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
