/**
 * The ACP SDK loads with the first agent process, not with the daemon: its module builds
 * the whole protocol's zod schemas when it loads, about 8.5 MiB of an idle daemon's RSS
 * (bench/README.md, figure 7). One module loads it (src/agent/acp-sdk.ts); every other file
 * of the daemon takes its types only, which TypeScript erases. The demo agent is a program
 * of its own (an agent, not the daemon) and imports it as it likes.
 *
 * Pinned twice, like the layers: the real tree keeps the rule, and a file that imports a
 * value from the SDK is named by the same check, so a check that matched nothing fails here.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const LOADER = "src/agent/acp-sdk.ts";
const OWN_PROGRAMS = /^src\/demo\//;

/** Each import of the SDK in `text` that loads it when the file loads: anything but `import type` / `export type`. */
function loadingImports(text: string): string[] {
  const found: string[] = [];
  // `import … from "…"`, `export … from "…"`, `import "…"`: what lies between the keyword and
  // the module's name is names, braces, commas, `*` and `as`, never a call or a declaration.
  const statement = /(?:^|\n)[ \t]*((?:import|export)\b[\w$*{},\s]*?["']@agentclientprotocol\/sdk[^"']*["'])/g;
  for (const m of text.matchAll(statement)) {
    const s = m[1]!.replace(/\s+/g, " ");
    if (/^(?:import|export) type\b/.test(s)) continue;
    found.push(s);
  }
  for (const m of text.matchAll(/\bimport\(\s*["']@agentclientprotocol\/sdk[^"']*["']\s*\)/g)) found.push(m[0]);
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

test("only src/agent/acp-sdk.ts loads the ACP SDK; every other file of the daemon imports its types only", () => {
  const offenders: string[] = [];
  for (const file of sourceFiles("src")) {
    if (file === LOADER || OWN_PROGRAMS.test(file)) continue;
    for (const s of loadingImports(readFileSync(file, "utf8"))) offenders.push(`${file}: ${s}`);
  }
  assert.deepEqual(offenders, [], "import the SDK's types with `import type`; values through acpSdk() (src/agent/acp-sdk.ts)");
  assert.equal(loadingImports(readFileSync(LOADER, "utf8")).length, 1, "the loader's own import() of the SDK");
});

test("the check names a value import, a re-export, a side-effect import and a dynamic import, and lets types pass", () => {
  const text = [
    'import type * as acp from "@agentclientprotocol/sdk/unstable";',
    'import type {\n  ContentBlock,\n  StopReason,\n} from "@agentclientprotocol/sdk";',
    'export type { Usage } from "@agentclientprotocol/sdk/unstable";',
    'import {\n  ndJsonStream,\n} from "@agentclientprotocol/sdk/unstable";',
    'export { RequestError } from "@agentclientprotocol/sdk";',
    'import "@agentclientprotocol/sdk/unstable";',
    'const sdk = await import("@agentclientprotocol/sdk/unstable");',
  ].join("\n");
  assert.deepEqual(loadingImports(text), [
    'import { ndJsonStream, } from "@agentclientprotocol/sdk/unstable"',
    'export { RequestError } from "@agentclientprotocol/sdk"',
    'import "@agentclientprotocol/sdk/unstable"',
    'import("@agentclientprotocol/sdk/unstable")',
  ]);
});
