/**
 * Test-only fault injection at the one window where a crash or a lost answer can double a
 * reply: between the relay storing the bridge's message and the bridge recording that it
 * did. Off unless the environment variable BUZZ_BRIDGE_FAULT is set (never in production;
 * docs/development.md says so). The value is a comma-separated list of
 *
 *   kill-after-reply-ok:N   SIGKILL this process the moment the relay's OK for its Nth
 *                           kind 9 message arrives, before anyone hears of it
 *   swallow-reply-ok:N      drop the relay's OK for its Nth kind 9 message, as a lost
 *                           frame would (the publish times out and is retried or confirmed)
 *
 * N counts distinct kind 9 events this process sends (1 = the first).
 */
import type { Event } from "nostr-tools";
import { KIND } from "../nostr/kinds.js";

export type ReplyFault = "kill" | "swallow";

const FAULT_ENV = "BUZZ_BRIDGE_FAULT";

type Parsed = { ok: true; faults: Map<number, ReplyFault> } | { ok: false; error: string };

/** Parses the variable's value; an unknown entry is an error naming it. */
function parseFaults(value: string | undefined): Parsed {
  const faults = new Map<number, ReplyFault>();
  for (const raw of (value ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^(kill-after-reply-ok|swallow-reply-ok):([1-9]\d*)$/.exec(raw);
    if (!m) return { ok: false, error: `${FAULT_ENV}: '${raw}' is not a fault point; use kill-after-reply-ok:N or swallow-reply-ok:N` };
    faults.set(Number(m[2]), m[1] === "kill-after-reply-ok" ? "kill" : "swallow");
  }
  return { ok: true, faults };
}

/** A bad BUZZ_BRIDGE_FAULT value, found at start-up rather than at the first reply. */
class FaultEnvError extends Error {
  override name = "FaultEnvError";
}

/** Throws FaultEnvError when the variable is set to something that is not a fault point. */
export function checkFaultEnv(env: NodeJS.ProcessEnv = process.env): void {
  const p = parseFaults(env[FAULT_ENV]);
  if (!p.ok) throw new FaultEnvError(p.error);
}

let armed: Map<number, ReplyFault> | undefined;
const seen = new Set<string>();

function faults(): Map<number, ReplyFault> {
  if (!armed) {
    const p = parseFaults(process.env[FAULT_ENV]);
    if (!p.ok) {
      process.stderr.write(`${p.error}\n`);
      process.exit(2);
    }
    armed = p.faults;
  }
  return armed;
}

/** The fault armed for this event, if any (counts each kind 9 event once, retries included). */
export function replyFaultFor(ev: Event): ReplyFault | undefined {
  if (ev.kind !== KIND.message || !process.env[FAULT_ENV]) return undefined;
  const f = faults();
  if (f.size === 0) return undefined;
  if (!seen.has(ev.id)) seen.add(ev.id);
  else return undefined;
  return f.get(seen.size);
}

/** The kill fault: no cleanup, no flush — exactly what a power cut would leave. */
export function killNow(): never {
  process.kill(process.pid, "SIGKILL");
  throw new Error("unreachable");
}
