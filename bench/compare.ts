/**
 * The same bench parts on two builds, side by side: this checkout and another one
 * (`BENCH_AGAINST=DIR`, a checkout of another revision, built, with its node_modules). The
 * runs alternate, the other build first, so the machine's load falls on both alike; with
 * `BENCH_ROUNDS=N` each row shows the median of the N runs' medians.
 *
 *   BENCH_AGAINST=/tmp/other node --import tsx bench/compare.ts
 *   BENCH_AGAINST=/tmp/other BENCH_ONLY=mention,fleet BENCH_ROUNDS=2 node --import tsx bench/compare.ts
 *
 * By default the parts a change to the queue's path shows in: `mention` (publish → gate
 * decision, → session/prompt) and `fleet` (throughput with 1–3 daemons, takeover, the
 * store's cost per accepted mention). Prints one Markdown table and writes every run's rows
 * to bench/compare.json. Each run is `bench/run.ts` of its own checkout (BENCH_ONLY,
 * BENCH_RESULTS), so both builds measure with their own bench code.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Row } from "./run.js";

const HERE = fileURLToPath(new URL("..", import.meta.url));

interface Run {
  tree: string;
  rows: Row[];
}

function runBench(tree: string, only: string, out: string): Promise<Row[]> {
  process.stderr.write(`compare: ${only} in ${tree} …\n`);
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ["--import", "tsx", "bench/run.ts"], {
      cwd: tree,
      env: { ...process.env, BENCH_ONLY: only, BENCH_RESULTS: out },
      stdio: ["ignore", "ignore", "inherit"],
    });
    child.on("error", fail);
    child.on("exit", (code) => {
      // A checkout whose run.ts predates BENCH_RESULTS writes its own bench/results.json.
      const file = existsSync(out) ? out : join(tree, "bench", "results.json");
      if (code !== 0) return fail(new Error(`bench/run.ts in ${tree} exited ${code}`));
      done((JSON.parse(readFileSync(file, "utf8")) as { rows: Row[] }).rows);
    });
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const fmt = (x: number | undefined) =>
  x === undefined ? "—" : Math.abs(x) >= 100 ? String(Math.round(x)) : String(Math.round(x * 100) / 100);

/** Rows measured in every run of a tree, by figure and measure, each with its medians and ratios over the runs. */
function collect(runs: Run[], tree: string): Map<string, { row: Row; medians: number[]; ratios: number[] }> {
  const by = new Map<string, { row: Row; medians: number[]; ratios: number[] }>();
  for (const run of runs.filter((r) => r.tree === tree))
    for (const row of run.rows) {
      if (row.median === null) continue;
      const key = `${row.figure} ${row.measure}`;
      const e = by.get(key) ?? { row, medians: [], ratios: [] };
      e.medians.push(row.median);
      if (row.ratio !== null) e.ratios.push(row.ratio);
      by.set(key, e);
    }
  return by;
}

export async function compare(): Promise<void> {
  const against = process.env.BENCH_AGAINST;
  if (!against || !existsSync(join(against, "bench", "run.ts")))
    throw new Error("BENCH_AGAINST must name another checkout of buzz-bridge, built (npm run build) and with its node_modules");
  const other = resolve(against);
  const label = process.env.BENCH_AGAINST_LABEL ?? basename(other);
  const only = process.env.BENCH_ONLY ?? "mention,fleet";
  const rounds = Number(process.env.BENCH_ROUNDS ?? 1);
  const load0 = loadavg()[0]!;
  const tmp = mkdtempSync(join(tmpdir(), "bench-compare-"));
  const runs: Run[] = [];
  try {
    for (let i = 0; i < rounds; i++)
      for (const tree of [other, HERE]) {
        const out = join(tmp, `${runs.length}.json`);
        runs.push({ tree, rows: await runBench(tree, only, out) });
      }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const before = collect(runs, other);
  const after = collect(runs, HERE);
  const lines = [
    `| # | figure | ${label}: median | ratio | this checkout: median | ratio | this / ${label} |`,
    "|---|---|---:|---:|---:|---:|---:|",
  ];
  for (const [key, a] of after) {
    const b = before.get(key);
    const am = median(a.medians);
    const bm = b ? median(b.medians) : undefined;
    const ratio = (e: { ratios: number[] } | undefined) => (e?.ratios.length ? `${fmt(median(e.ratios))}×` : "—");
    lines.push(
      `| ${a.row.figure} | ${a.row.measure} | ${bm === undefined ? "—" : `${fmt(bm)} ${a.row.unit}`} | ${ratio(b)} | ${fmt(am)} ${a.row.unit} | ${ratio(a)} | ${bm ? `${fmt(am / bm)}×` : "—"} |`,
    );
  }
  const summary = `${rounds} round(s) of ${only} on ${cpus().length} CPUs (load ${load0.toFixed(1)} at start), node ${process.version}, ${new Date().toISOString()}`;
  writeFileSync(
    join(HERE, "bench", "compare.json"),
    `${JSON.stringify({ against: label, parts: only, rounds, summary, runs: runs.map((r) => ({ tree: r.tree === HERE ? "this checkout" : label, rows: r.rows })) }, null, 2)}\n`,
  );
  console.log(lines.join("\n"));
  console.log(`\n${summary}; every run's rows in bench/compare.json`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1]))
  compare().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
