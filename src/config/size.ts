/**
 * Sizes in config are written as `256KiB`, `10MiB` (binary) or `500KB`, `2MB` (decimal), or
 * as a plain number of bytes, and held as bytes in code.
 */
const UNITS: Record<string, number> = {
  B: 1,
  KB: 1000,
  MB: 1000 ** 2,
  GB: 1000 ** 3,
  KiB: 1024,
  MiB: 1024 ** 2,
  GiB: 1024 ** 3,
};
const PATTERN = /^(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|KiB|MiB|GiB)?$/;
export const SIZE_PATTERN = PATTERN.source;

/** Returns bytes (whole), or null when the text is not a size. */
export function parseSize(text: string): number | null {
  const m = PATTERN.exec(text.trim());
  if (!m) return null;
  return Math.floor(Number(m[1]) * UNITS[m[2] ?? "B"]!);
}

/** The shortest exact binary spelling: 262144 → "256KiB", 1000 → "1000B". */
export function formatSize(bytes: number): string {
  for (const unit of ["GiB", "MiB", "KiB"] as const) {
    const size = UNITS[unit]!;
    if (bytes >= size && bytes % size === 0) return `${bytes / size}${unit}`;
  }
  return `${bytes}B`;
}

/** A size for people (prompts, log lines): 10485760 → "10 MiB", 2000000000 → "1.9 GiB", 512 → "512 B". */
export function formatBytes(n: number): string {
  for (const unit of ["GiB", "MiB", "KiB"] as const) {
    const size = UNITS[unit]!;
    if (n >= size) {
      const v = n / size;
      return `${Number.isInteger(v) ? v : v.toFixed(1)} ${unit}`;
    }
  }
  return `${n} B`;
}
