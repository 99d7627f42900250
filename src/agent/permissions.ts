/**
 * Answers to `session/request_permission` per `agent.permissions`. Options are chosen
 * by `kind`, never by id: ids differ per agent (`allow-once`, `allow`,
 * `proceed_always_server`, …) while the kinds are fixed by the protocol.
 */
import type * as acp from "@agentclientprotocol/sdk/unstable";

export type PermissionPolicy = "allow" | "deny" | "ask-owner";

/**
 * Asks the owner (the daemon posts the question in the thread and waits for 👍/👎).
 * Resolves true for allow; false, a rejection or the signal aborting count as deny.
 */
export type AskOwner = (request: acp.RequestPermissionRequest, signal: AbortSignal) => Promise<boolean>;

export interface PermissionDecision {
  response: acp.RequestPermissionResponse;
  /** What was decided and why, for the log. */
  verdict: "allowed" | "denied" | "cancelled";
  by: "policy" | "owner" | "timeout" | "no-owner-channel" | "cancel" | "pre_tool";
}

const ALLOW_KINDS: acp.PermissionOptionKind[] = ["allow_once", "allow_always"];
const REJECT_KINDS: acp.PermissionOptionKind[] = ["reject_once", "reject_always"];

/** The first option of the preferred kinds, in preference order. */
function optionByKind(options: acp.PermissionOption[], kinds: acp.PermissionOptionKind[]): acp.PermissionOption | undefined {
  for (const kind of kinds) {
    const found = options.find((o) => o.kind === kind);
    if (found) return found;
  }
  return undefined;
}

const CANCELLED: acp.RequestPermissionResponse = { outcome: { outcome: "cancelled" } };

/** Allow → allow_once (else allow_always); deny → reject_once (else reject_always); none → cancelled. */
export function answer(options: acp.PermissionOption[], allow: boolean): acp.RequestPermissionResponse {
  const option = optionByKind(options, allow ? ALLOW_KINDS : REJECT_KINDS);
  return option ? { outcome: { outcome: "selected", optionId: option.optionId } } : CANCELLED;
}

export interface DecideOptions {
  policy: PermissionPolicy;
  askOwner?: AskOwner;
  /** Bound on the owner's answer; default 10 min (`agent.permission_timeout`). A timeout is a deny. */
  timeoutMs?: number;
  /** Aborts when the turn is cancelled or the agent withdraws the request: answer `cancelled`. */
  signal: AbortSignal;
}

export async function decidePermission(request: acp.RequestPermissionRequest, opts: DecideOptions): Promise<PermissionDecision> {
  if (opts.signal.aborted) return { response: CANCELLED, verdict: "cancelled", by: "cancel" };
  if (opts.policy === "allow") return { response: answer(request.options, true), verdict: "allowed", by: "policy" };
  if (opts.policy === "deny") return { response: answer(request.options, false), verdict: "denied", by: "policy" };
  if (!opts.askOwner) return { response: answer(request.options, false), verdict: "denied", by: "no-owner-channel" };

  const ask = new AbortController();
  const onAbort = () => ask.abort();
  opts.signal.addEventListener("abort", onAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<"timeout">((r) => {
    timer = setTimeout(() => {
      ask.abort();
      r("timeout");
    }, opts.timeoutMs ?? 600_000);
  });
  const cancelled = new Promise<"cancel">((r) => {
    if (opts.signal.aborted) r("cancel");
    opts.signal.addEventListener("abort", () => r("cancel"), { once: true });
  });
  try {
    const result = await Promise.race([
      opts.askOwner(request, ask.signal).then(
        (ok) => (ok ? "yes" : "no"),
        () => "no" as const,
      ),
      timedOut,
      cancelled,
    ]);
    if (result === "cancel") return { response: CANCELLED, verdict: "cancelled", by: "cancel" };
    if (result === "timeout") return { response: answer(request.options, false), verdict: "denied", by: "timeout" };
    return result === "yes"
      ? { response: answer(request.options, true), verdict: "allowed", by: "owner" }
      : { response: answer(request.options, false), verdict: "denied", by: "owner" };
  } finally {
    clearTimeout(timer);
    opts.signal.removeEventListener("abort", onAbort);
    ask.abort();
  }
}
