/**
 * config/grafana-dashboard.json stays in step with the metrics the daemon serves
 * (src/app/http/metrics.ts): every metric a panel queries exists, with the labels the panel
 * groups by, and every metric of the daemon is on some panel. Renaming a metric or
 * adding one without a panel fails here.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Metrics } from "../../src/app/http/metrics.js";
import { REPO } from "../../kit/world.js";

interface Panel {
  type: string;
  title: string;
  targets?: Array<{ expr: string }>;
}

const dashboard = JSON.parse(readFileSync(join(REPO, "config", "grafana-dashboard.json"), "utf8")) as { panels: Panel[]; title: string };
const served = new Map(
  new Metrics({ defaultMetrics: false }).registry.getMetricsAsArray().map((m) => {
    const meta = m as unknown as { name: string; labelNames?: string[]; constructor: { name: string } };
    return [meta.name, { labels: new Set(meta.labelNames ?? []), histogram: meta.constructor.name === "Histogram" }];
  }),
);

/** The served metric a series name in a query belongs to (a histogram's _bucket/_sum/_count included). */
function metricOf(series: string): string | undefined {
  if (served.has(series)) return series;
  const base = series.replace(/_(bucket|sum|count)$/, "");
  return served.get(base)?.histogram ? base : undefined;
}

const queries = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));

test("every metric a dashboard panel queries is one the daemon serves, grouped only by labels it has", () => {
  assert.ok(queries.length > 0, "the dashboard has queries");
  for (const q of queries) {
    const series = [...q.expr.matchAll(/\bbuzz_bridge_[a-z_]+/g)].map((m) => m[0]);
    assert.ok(series.length > 0, `panel '${q.panel}' queries no buzz_bridge metric: ${q.expr}`);
    const labels = new Set<string>(["le", "job", "instance"]);
    for (const s of series) {
      const name = metricOf(s);
      assert.ok(name, `panel '${q.panel}' queries ${s}, which src/app/http/metrics.ts does not define`);
      for (const l of served.get(name)!.labels) labels.add(l);
    }
    for (const m of q.expr.matchAll(/\bby\s*\(([^)]*)\)/g)) {
      for (const l of m[1]!
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean)) {
        assert.ok(labels.has(l), `panel '${q.panel}' groups by '${l}', a label none of its metrics has: ${q.expr}`);
      }
    }
  }
});

test("every metric the daemon serves is on a dashboard panel", () => {
  const used = new Set(queries.flatMap((q) => [...q.expr.matchAll(/\bbuzz_bridge_[a-z_]+/g)].map((m) => metricOf(m[0]))));
  const missing = [...served.keys()].filter((n) => n.startsWith("buzz_bridge_") && !used.has(n));
  assert.deepEqual(missing, [], "metrics without a panel in config/grafana-dashboard.json");
});
