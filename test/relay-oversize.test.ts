/**
 * Output larger than the relay takes (docs/protocol.md, "Limits": content ≤ 256 KB): a long
 * reply becomes ordered, marked parts in the mention's thread, through the tool and through
 * the final-text fallback, never truncated; a mention too large for the prompt is cut there
 * with a visible marker, and still answered.
 */
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "nostr-tools";
import { escapedSize, splitContent, MAX_CONTENT_BYTES } from "../src/nostr/split.js";
import { World } from "../kit/world.js";

let w: World;
before(async () => {
  w = await World.create();
  // Above the relay's content limit, so one message (tool or fallback) has to be split.
  await w.startDaemon({ replies: { max_bytes: "1MiB" } });
});
after(() => w.close());

const marker = /^\((\d+)\/(\d+)\) /;
/** The parts in marker order, checked to be complete; returns their text joined without markers. */
function reassemble(parts: Event[], n: number): string {
  assert.equal(parts.length, n, `${n} parts in the thread`);
  const sorted = [...parts].sort((a, b) => Number(marker.exec(a.content)![1]) - Number(marker.exec(b.content)![1]));
  sorted.forEach((p, i) => {
    const m = marker.exec(p.content);
    assert.ok(m, `part ${i + 1} starts with its marker`);
    assert.deepEqual([Number(m[1]), Number(m[2])], [i + 1, n]);
    assert.ok(Buffer.byteLength(p.content) <= MAX_CONTENT_BYTES, "each part fits the relay's content limit");
  });
  return sorted.map((p) => p.content.replace(marker, "")).join("");
}

test("a reply longer than the relay's content limit arrives as ordered, marked parts in the thread", async () => {
  const ev = await w.owner.post("@agent #long 600000 tell me everything");
  const parts = await w.waitReplies(ev, 3, 60_000);
  const text = reassemble(parts, 3);
  assert.match(text, /^Demo agent here/);
  const lines = text.split("\n").filter((l) => l.startsWith("filler line"));
  assert.ok(text.length >= 600_000, `all ${text.length} characters arrived`);
  lines.forEach((l, i) => assert.ok(l.startsWith(`filler line ${String(i + 1).padStart(7, "0")}:`), `line ${i + 1} in order and whole`));
});

test("a long final-text fallback reply is split the same way", async () => {
  const ev = await w.owner.post("@agent #final-only #long 300000 no tool please");
  const parts = await w.waitReplies(ev, 2, 60_000);
  const text = reassemble(parts, 2);
  assert.ok(text.length >= 300_000);
});

test("a mention larger than the prompt budget is cut there with a visible marker and still answered", async () => {
  const big = `@agent please read this: ${"x".repeat(120_000)} END`;
  const ev = await w.owner.post(big);
  const reply = await w.waitReply(ev, 60_000);
  assert.match(
    reply.content,
    /\[… cut by the bridge: \d+ more characters of this message are not shown; get_thread with event [0-9a-f]{64} reads it in full\]/,
  );
  assert.doesNotMatch(reply.content, /END/, "the tail was cut");
});

test("splitContent keeps short text whole and never splits a character", () => {
  assert.deepEqual(splitContent("hello"), ["hello"]);
  const parts = splitContent("é😀".repeat(50), 60);
  assert.ok(parts.length > 1);
  assert.equal(parts.map((p) => p.replace(marker, "")).join(""), "é😀".repeat(50));
  for (const p of parts) assert.ok(Buffer.byteLength(JSON.stringify(p)) - 2 <= 60);
});

test("splitContent measures as JSON.stringify does and puts the text back together exactly, whatever it holds", () => {
  const alphabet = ["a", "\n", '"', "\\", "\u0001", "\t", "é", "€", "😀", "\ud800", "\udc00", "\u2028", " "];
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  for (let round = 0; round < 40; round++) {
    const text = Array.from({ length: 200 + (next() % 2000) }, () => alphabet[next() % alphabet.length]).join("");
    assert.equal(escapedSize(text), Buffer.byteLength(JSON.stringify(text)) - 2, "escaped size");
    const max = 64 + (next() % 400);
    const parts = splitContent(text, max);
    assert.equal(parts.length > 1 ? parts.map((p) => p.replace(marker, "")).join("") : parts[0], text);
    for (const p of parts) assert.ok(escapedSize(p) <= max, `a part of ${escapedSize(p)} escaped bytes, over ${max}`);
  }
});
