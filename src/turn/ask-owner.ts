/**
 * `agent.permissions: ask-owner`: the agent's permission question is posted in the turn's
 * thread, mentioning the owner, and the answer is the owner's 👍 (allow) or 👎 (deny)
 * reaction on that post. Reactions are read with `/query` every few seconds rather than
 * a live subscription: the question is rare, and this keeps the one channel REQ as it is.
 * The agent runner bounds the wait (`agent.permission_timeout`) and counts silence as deny.
 */
import type * as acp from "@agentclientprotocol/sdk";
import { message, type ThreadRef } from "../nostr/events.js";
import { KIND } from "../nostr/kinds.js";
import type { RelayPort } from "../link/index.js";
import type { TurnPublisher } from "./ports.js";
import { sleep } from "../base/backoff.js";

const ALLOW_EMOJI = ["👍", "+", "✅"];
const DENY_EMOJI = ["👎", "-", "❌"];

export interface AskOwnerDeps {
  channel: string;
  thread: ThreadRef;
  owner: string;
  out: TurnPublisher;
  relay: RelayPort;
  signal?: AbortSignal;
  pollMs?: number;
  timeoutMs?: number;
}

function questionText(req: acp.RequestPermissionRequest): string {
  const what = req.toolCall.title ?? req.toolCall.toolCallId;
  const input = req.toolCall.rawInput === undefined ? "" : `\n\nInput: ${JSON.stringify(req.toolCall.rawInput).slice(0, 500)}`;
  return `Permission needed: the agent wants to run "${what}".${input}\n\nReact 👍 to allow or 👎 to deny.`;
}

export async function askOwnerByReaction(req: acp.RequestPermissionRequest, d: AskOwnerDeps, signal?: AbortSignal): Promise<boolean> {
  const stop = anySignal([d.signal, signal]);
  const question = await d.out.publish(message(d.channel, questionText(req), { thread: d.thread, mentions: [d.owner] }));
  if (!question) return false;
  const deadline = Date.now() + (d.timeoutMs ?? 600_000);
  while (Date.now() < deadline) {
    await sleep(d.pollMs ?? 2000, stop);
    if (stop.aborted) return false;
    const reactions = await d.relay.query([{ kinds: [KIND.reaction], "#e": [question.id], authors: [d.owner] }]).catch(() => []);
    for (const r of reactions.sort((a, b) => b.created_at - a.created_at)) {
      if (ALLOW_EMOJI.includes(r.content.trim())) return true;
      if (DENY_EMOJI.includes(r.content.trim())) return false;
    }
  }
  return false;
}

function anySignal(signals: (AbortSignal | undefined)[]): AbortSignal {
  const ctl = new AbortController();
  for (const s of signals) {
    if (!s) continue;
    if (s.aborted) ctl.abort();
    else s.addEventListener("abort", () => ctl.abort(), { once: true });
  }
  return ctl.signal;
}
