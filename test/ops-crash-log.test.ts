/**
 * A daemon that meets an error nothing handled (app/commands/crash-log.ts) leaves one
 * `daemon.crashed` line an operator can search for, with the stack and no secret, and exits
 * 2 (a runtime failure), not Node's 1 (which reads as a config error).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateSecretKey, nip19 } from "nostr-tools";

const child = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "crash-child.ts");

async function crash(
  kind: "exception" | "rejection",
): Promise<{ code: number | null; lines: Record<string, unknown>[]; raw: string; nsec: string }> {
  const nsec = nip19.nsecEncode(generateSecretKey());
  const p = spawn(process.execPath, ["--import", "tsx", child, kind, nsec], { stdio: ["ignore", "pipe", "pipe"] });
  let raw = "";
  p.stdout.setEncoding("utf8").on("data", (c: string) => (raw += c));
  p.stderr.setEncoding("utf8").on("data", (c: string) => (raw += c));
  const [code] = (await once(p, "exit")) as [number | null];
  const lines = raw
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { code, lines, raw, nsec };
}

for (const kind of ["exception", "rejection"] as const) {
  test(`an unhandled ${kind}: one daemon.crashed line at fatal, with the stack and the nsec masked; exit 2`, async () => {
    const { code, lines, raw, nsec } = await crash(kind);
    assert.equal(code, 2, `exit 2; output:\n${raw}`);
    const crashed = lines.filter((l) => l.evt === "daemon.crashed");
    assert.equal(crashed.length, 1, `one daemon.crashed line; output:\n${raw}`);
    const line = crashed[0]!;
    assert.equal(line.level, "fatal");
    assert.equal(line.kind, kind);
    assert.match(String(line.err), /^a bug while holding nsec1\[redacted\]$/);
    assert.match(String(line.stack), /crash-child\.ts/, "the stack says where");
    assert.ok(!raw.includes(nsec), "the nsec is nowhere in the output");
  });
}
