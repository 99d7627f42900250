/**
 * Secrets in public tool titles, as a channel member sees them (docs/security.md): through
 * the daemon, the demo agent (`#busy` with `#titles`, reporting every title of the corpus in
 * test/fixtures/title-secrets.ts) and the dev relay, the stranger's live subscription
 * collects every work status (kind 30181) and "still working" note (and its edits). By
 * default (`tool_titles: brief`) they name the tool's kind only — `shell`, `edit x.ts`, a
 * secret-shaped path never; with `tool_titles: full` the channel sees whole titles, and
 * still none of the corpus's secrets.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Event } from "nostr-tools";
import { World } from "../kit/world.js";
import { KIND } from "../src/nostr/kinds.js";
import { TITLE_SECRETS } from "./fixtures/title-secrets.js";

let w: World;
let full: string;
const seen = new Map<string, Event[]>();

before(async () => {
  w = await World.create();
  full = await w.addChannel({ name: "full-titles" });
  const stranger = await w.stranger.relay();
  for (const ch of [w.channel, full]) {
    seen.set(ch, []);
    stranger.watch(
      `titles-${ch.slice(0, 8)}`,
      () => [{ kinds: [KIND.workStatus, KIND.message, KIND.edit], authors: [w.agent.pk], "#h": [ch] }],
      (ev) => seen.get(ch)!.push(ev),
    );
  }
  await w.startDaemon({ progress: { after: "1s" }, channels: [{ id: w.channel }, { id: full, tool_titles: "full" }] });
});
after(() => w.close());

const corpusFile = () => {
  // In the world's directory: the sandboxed agent has it bound in, not the host's temp dir.
  const file = join(w.dir, "corpus.json");
  writeFileSync(file, JSON.stringify(TITLE_SECRETS.map((c) => ({ title: c.title, kind: "execute" }))));
  return file;
};
const toolTitles = (evs: Event[]) =>
  evs
    .filter((e) => e.kind === KIND.workStatus)
    .flatMap((e) => (JSON.parse(e.content).activity ?? []) as { kind: string; title: string }[])
    .filter((a) => a.kind === "tool")
    .map((a) => a.title);
const notes = (evs: Event[]) => evs.filter((e) => e.kind !== KIND.workStatus && /Still working/.test(e.content)).map((e) => e.content);
/**
 * Without the agent's reply: a tool call too (send_message, a bare tool name, shown as such),
 * which on a slow machine the board or the note may be published during.
 */
const corpus = (shown: string[]) => shown.filter((t) => t !== "send_message" && !t.endsWith("now: send_message"));
const leaks = (evs: Event[]) => {
  const text = evs.map((e) => e.content).join("\n");
  return TITLE_SECRETS.filter((c) => c.secrets.some((s) => text.includes(s))).map((c) => c.form);
};

test("by default members see the tool's kind only: no argument text, no secret of the corpus", { timeout: 120_000 }, async () => {
  const asked = await w.owner.post(`@agent #busy 9000 #titles ${corpusFile()} run them`);
  await w.waitReaction(asked, "✅", 90_000);
  const evs = seen.get(w.channel)!;
  const titles = toolTitles(evs);
  assert.ok(titles.length > 0, `the stranger saw the work status with tools (${evs.length} events)`);
  assert.deepEqual([...new Set(corpus(titles))], ["shell"], "every tool of the corpus shown as its kind");
  assert.deepEqual(corpus(notes(evs)), ["Still working on this — now: shell"]);
  assert.deepEqual(leaks(evs), []);
});

test("a file tool shows its file, a secret-shaped path not even that", { timeout: 120_000 }, async () => {
  const file = join(w.dir, "edits.json");
  writeFileSync(
    file,
    JSON.stringify([
      { title: "Edit /work/app/src/x.ts with API_KEY=abc", kind: "edit", locations: [{ path: "/work/app/src/x.ts" }] },
      { title: "Write /work/app/.env", kind: "edit", locations: [{ path: "/work/app/.env" }] },
    ]),
  );
  const before = seen.get(w.channel)!.length;
  const asked = await w.owner.post(`@agent #busy 12000 #titles ${file} edit them`);
  await w.waitReaction(asked, "✅", 90_000);
  const evs = seen.get(w.channel)!.slice(before);
  assert.deepEqual(corpus(notes(evs)), ["Still working on this — now: edit x.ts"]);
  const titles = new Set(corpus(toolTitles(evs)));
  assert.ok(titles.has("edit x.ts") && [...titles].every((t) => t === "edit x.ts" || t === "edit"), [...titles].join(", "));
  assert.ok(!evs.some((e) => /\.env|API_KEY/.test(e.content)), "neither the secret-shaped path nor the argument text");
});

test("tool_titles: full shows whole titles, and still none of the corpus's secrets", { timeout: 120_000 }, async () => {
  const asked = await w.owner.post(`@agent #busy 9000 #titles ${corpusFile()} run them`, { channel: full });
  await w.waitReaction(asked, "✅", 90_000);
  const evs = seen.get(full)!;
  const titles = toolTitles(evs);
  assert.ok(titles.length > 0, `the stranger saw the work status with tools (${evs.length} events)`);
  assert.ok(
    titles.every((t) => t !== "shell"),
    "whole titles, not the kind",
  );
  assert.equal(corpus(notes(evs)).length, 1);
  assert.ok(
    TITLE_SECRETS.some((c) => notes(evs)[0]!.includes(c.title.split(" ")[0]!)),
    `the note names the command: ${notes(evs)[0]}`,
  );
  assert.deepEqual(leaks(evs), []);
});
