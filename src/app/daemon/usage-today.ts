/**
 * Usage since midnight UTC, per channel and model, for `!status` and the status page
 * (Prometheus keeps the all-time counters). In memory: a restart starts the day's tally
 * again, which the page says.
 */
import type { TurnUsage } from "../../agent/index.js";

export interface UsageRow {
  channel: string;
  model: string;
  turns: number;
  inputTokens: number;
  outputTokens: number;
  /** Per currency. */
  cost: Record<string, number>;
}

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export class UsageToday {
  private day: string;
  private readonly rows = new Map<string, UsageRow>();

  constructor(private readonly now: () => number = Date.now) {
    this.day = dayOf(now());
  }

  private roll(): void {
    const today = dayOf(this.now());
    if (today !== this.day) {
      this.day = today;
      this.rows.clear();
    }
  }

  add(channel: string, model: string | undefined, u: TurnUsage): void {
    this.roll();
    const m = model ?? "unknown";
    const key = `${channel}\u0000${m}`;
    const row = this.rows.get(key) ?? { channel, model: m, turns: 0, inputTokens: 0, outputTokens: 0, cost: {} };
    row.turns++;
    row.inputTokens += u.inputTokens;
    row.outputTokens += u.outputTokens;
    if (u.cost) row.cost[u.cost.currency] = (row.cost[u.cost.currency] ?? 0) + u.cost.amount;
    this.rows.set(key, row);
  }

  /** The day (YYYY-MM-DD, UTC) and its rows. */
  snapshot(): { day: string; rows: UsageRow[] } {
    this.roll();
    return { day: this.day, rows: [...this.rows.values()].map((r) => ({ ...r, cost: { ...r.cost } })) };
  }

  /** One line for `!status`: totals of the day over all channels and models. */
  summary(): string {
    const { rows } = this.snapshot();
    if (rows.length === 0) return "no usage reported today";
    const sum = (f: (r: UsageRow) => number) => rows.reduce((a, r) => a + f(r), 0);
    const cost: Record<string, number> = {};
    for (const r of rows) for (const [c, a] of Object.entries(r.cost)) cost[c] = (cost[c] ?? 0) + a;
    const costText = Object.entries(cost)
      .map(([c, a]) => `${formatCost(a)} ${c}`)
      .join(" + ");
    return `today: ${sum((r) => r.inputTokens)} tokens in, ${sum((r) => r.outputTokens)} out${costText ? `, ${costText}` : ""} over ${sum((r) => r.turns)} turn${sum((r) => r.turns) === 1 ? "" : "s"}`;
  }
}

function formatCost(amount: number): string {
  return amount >= 1 ? amount.toFixed(2) : amount.toPrecision(3).replace(/\.?0+$/, "");
}
