/**
 * File types by extension and back, for the types people attach most: enough to label an
 * upload (the agent names a file, the bridge says its type) and to name a stored blob.
 * Anything else is `application/octet-stream` / `bin`.
 */
const TYPES: ReadonlyArray<readonly [ext: string, type: string]> = [
  ["png", "image/png"],
  ["jpg", "image/jpeg"],
  ["jpeg", "image/jpeg"],
  ["gif", "image/gif"],
  ["webp", "image/webp"],
  ["svg", "image/svg+xml"],
  ["txt", "text/plain"],
  ["log", "text/plain"],
  ["md", "text/markdown"],
  ["diff", "text/x-diff"],
  ["patch", "text/x-diff"],
  ["csv", "text/csv"],
  ["html", "text/html"],
  ["json", "application/json"],
  ["yaml", "application/yaml"],
  ["yml", "application/yaml"],
  ["pdf", "application/pdf"],
  ["zip", "application/zip"],
  ["gz", "application/gzip"],
];

/** The type of a file by its name's extension. */
export function typeForName(name: string): string {
  const ext = /\.([A-Za-z0-9]{1,8})$/.exec(name)?.[1]?.toLowerCase();
  return TYPES.find(([e]) => e === ext)?.[1] ?? "application/octet-stream";
}

/** The usual extension of a type (its first in the table). */
export function extForType(type: string): string {
  return TYPES.find(([, t]) => t === type)?.[0] ?? "bin";
}
