/**
 * A merged hook run's answer, as the proxy computes it (proxy/hooks.ts) and the daemon's
 * turn reads it over the link (turn/stop-gates.ts). Part of the daemon↔proxy contract.
 */

type Verdict = "allow" | "object";

export interface HookServerResult {
  name: string;
  ms: number;
  verdict: Verdict;
  timed_out: boolean;
  error?: string;
  /** A `stop: wait` server that was not running when the hook was due (it failed to start, crashed, is restarting). */
  down?: boolean;
  /** This server's answer as given (trimmed), or the on_error objection text. */
  text: string;
}

export interface HookFanout {
  /** The merged answer, as the agent receives it. */
  text: string;
  verdict: Verdict;
  ms: number;
  servers: HookServerResult[];
}
