/**
 * Durations in config are written as `90s`, `15m`, `2h` (also `ms` and `d`) and held as
 * milliseconds in code. A bare number is refused: `30` could mean seconds or minutes.
 */
const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PATTERN = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;
export const DURATION_PATTERN = PATTERN.source;

/** Returns milliseconds, or null when the text is not a duration. */
export function parseDuration(text: string): number | null {
  const m = PATTERN.exec(text.trim());
  if (!m) return null;
  return Math.round(Number(m[1]) * UNITS[m[2]!]!);
}

/** The shortest exact spelling: 90000 → "90s", 900000 → "15m", 1500 → "1500ms". */
export function formatDuration(ms: number): string {
  for (const unit of ["d", "h", "m", "s"] as const) {
    const size = UNITS[unit]!;
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
