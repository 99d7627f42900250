/**
 * A turn's usage as the agent reports it over ACP: tokens from the `session/prompt`
 * answer's `usage` (this turn's input and output tokens) and cost from `usage_update`
 * notifications, whose `cost` is the session's running total — so a turn's cost is the
 * difference to the total seen at the end of the session's previous turn.
 */
import type { TurnResult } from "./turn-control.js";

export interface TurnUsage {
  inputTokens: number;
  outputTokens: number;
  /** This turn's cost, when the agent reports cost. */
  cost?: { amount: number; currency: string };
}

export class SessionUsage {
  private costSeen: { amount: number; currency: string } | undefined;

  /** The turn's usage, or undefined when the agent reported none. */
  of(result: Pick<TurnResult, "usage" | "contextUsage">): TurnUsage | undefined {
    const tokens = result.usage;
    const total = result.contextUsage?.cost ?? undefined;
    if (!tokens && !total) return undefined;
    const u: TurnUsage = { inputTokens: tokens?.inputTokens ?? 0, outputTokens: tokens?.outputTokens ?? 0 };
    if (total) {
      const before = this.costSeen?.currency === total.currency ? this.costSeen.amount : 0;
      u.cost = { amount: Math.max(0, total.amount - before), currency: total.currency };
      this.costSeen = { amount: total.amount, currency: total.currency };
    }
    return u;
  }
}

/** Adds two turns' usage (an initial message and the mention's prompt, gate re-prompts). */
export function addUsage(a: TurnUsage | undefined, b: TurnUsage | undefined): TurnUsage | undefined {
  if (!a) return b;
  if (!b) return a;
  const sum: TurnUsage = { inputTokens: a.inputTokens + b.inputTokens, outputTokens: a.outputTokens + b.outputTokens };
  if (a.cost && b.cost && a.cost.currency === b.cost.currency)
    sum.cost = { amount: a.cost.amount + b.cost.amount, currency: a.cost.currency };
  else if (a.cost || b.cost) sum.cost = a.cost ?? b.cost;
  return sum;
}
