/**
 * Sizes in config are written as `10MiB`, `512KiB`, `1GB` (or a plain number of bytes) and
 * held as bytes in code. Binary units (KiB, MiB, GiB) are powers of 1024, decimal ones
 * (KB, MB, GB) powers of 1000, as people mean them.
 */
const UNITS: Record<string, number> = { b: 1, kb: 1e3, kib: 1024, mb: 1e6, mib: 1024 ** 2, gb: 1e9, gib: 1024 ** 3 };
export const BYTES_PATTERN = /^\s*(\d+(?:\.\d+)?)\s*(B|KB|KiB|MB|MiB|GB|GiB)?\s*$/i;

/** Bytes, or null when the text is not a size. */
export function parseBytes(text: string | number): number | null {
  if (typeof text === "number") return Number.isInteger(text) && text >= 0 ? text : null;
  const m = BYTES_PATTERN.exec(text);
  if (!m) return null;
  return Math.round(Number(m[1]) * UNITS[(m[2] ?? "b").toLowerCase()]!);
}

/** A size for people: 10485760 → "10 MiB", 2000000000 → "1.9 GiB", 512 → "512 B". */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  for (const [unit, size] of [
    ["GiB", 1024 ** 3],
    ["MiB", 1024 ** 2],
    ["KiB", 1024],
  ] as const) {
    if (n >= size) {
      const v = n / size;
      return `${Number.isInteger(v) ? v : v.toFixed(1)} ${unit}`;
    }
  }
  return `${n} B`;
}
