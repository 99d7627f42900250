/**
 * The README and docs/ stay a set a newcomer can follow: the README stays a ten-minute read
 * (at most 20 KB; the rest lives in docs/), and every relative link in them points at a
 * file that exists, and at a heading that exists when it names one.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";

const pages = [
  "README.md",
  "CHANGELOG.md",
  "bench/README.md",
  ...readdirSync("docs")
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens. */
const anchor = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");

test("the README is at most 20 KB", () => {
  assert.ok(statSync("README.md").size <= 20 * 1024, `README.md is ${statSync("README.md").size} bytes`);
});

test("every relative link in the README and docs/ resolves, anchors included", () => {
  const broken: string[] = [];
  for (const page of pages) {
    const text = readFileSync(page, "utf8").replace(/```[\s\S]*?```/g, "");
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/.test(target)) continue; // https:, mailto:, nostr:
      const [path, hash] = target.split("#") as [string, string | undefined];
      const file = path ? normalize(join(dirname(page), path)) : page;
      if (!existsSync(file)) {
        broken.push(`${page}: ${target} (no ${file})`);
        continue;
      }
      if (hash && file.endsWith(".md")) {
        const headings = [...readFileSync(file, "utf8").matchAll(/^#{1,6} (.+)$/gm)].map((h) => anchor(h[1]!));
        if (!headings.includes(hash)) broken.push(`${page}: ${target} (no heading #${hash} in ${file})`);
      }
    }
  }
  assert.deepEqual(broken, []);
});
