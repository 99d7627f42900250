/**
 * docs/security.md's "Who can do what" backs every capability it lists with a test: each
 * `file › name` it cites is a test file (in test/ or test/unit/) that has a test of exactly that name.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO } from "../../kit/world.js";

test("every test docs/security.md names exists, in the file it names", () => {
  const page = readFileSync(join(REPO, "docs", "security.md"), "utf8");
  // The table of "Who can do what", up to the next section.
  const from = page.indexOf("## Who can do what");
  assert.ok(from >= 0, "the section is there");
  const doc = page.slice(from, page.indexOf("\n## ", from + 1));
  const rows = doc.split("\n").filter((l) => /^\| [a-zA-Z][a-zA-Z ]* \|/.test(l) && !l.startsWith("| who |"));
  assert.ok(rows.length >= 10, `${rows.length} rows`);
  const missing: string[] = [];
  for (const row of rows) {
    const refs = [...row.matchAll(/`([a-z0-9-]+\.test\.ts) › ([^`]+)`/g)];
    if (!refs.length) missing.push(`a row without a test: ${row.slice(0, 80)}`);
    for (const [, file, name] of refs) {
      // A cited file lives in test/ or, for the in-process tier, in test/unit/.
      const path = [join(REPO, "test", file!), join(REPO, "test", "unit", file!)].find((p) => existsSync(p));
      const source = path ? readFileSync(path, "utf8") : "";
      const quoted = [`"${name}"`, `'${name}'`, `\`${name}\``].some((q) => source.includes(q));
      if (!quoted) missing.push(`${file} › ${name}`);
    }
  }
  assert.deepEqual(missing, []);
});
