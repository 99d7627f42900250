/**
 * This daemon's instance id (buzz/instance.ts): made once and kept in the state directory
 * (`instance.id`, mode 0600), so a restart on the same directory is the same instance and
 * never mistakes its own beacon for another daemon's. The state lock guarantees one daemon
 * per directory, so one id per running daemon.
 */
import { randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const FILE = "instance.id";

export function instanceId(stateDir: string): string {
  const path = join(stateDir, FILE);
  try {
    const id = readFileSync(path, "utf8").trim();
    if (/^[0-9a-f-]{36}$/.test(id)) return id;
  } catch {
    // none yet
  }
  const id = randomUUID();
  writeFileSync(path, `${id}\n`, { mode: 0o600 });
  return id;
}
